package lock

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Release removes this holder's lock. It claims the record by renaming it
// out of the lock directory, checks that the claimed file is the inode and
// the bytes this holder wrote, and only then removes the directory. If the
// record was replaced (the lock was broken and taken over), everything is
// left in place and *TakenOverError is returned.
func (l *Lock) Release() error {
	// The kernel lock goes last, once the directory is removed (or left to
	// its new owner): a flock(1) waiter proceeds only then.
	defer l.dropKernel()
	d, err := fsx.OpenDir(l.dir)
	if err != nil {
		return fmt.Errorf("cannot release %s: %w", l.Path, err)
	}
	defer d.Close()
	in, err := d.OpenDir(l.name)
	if errors.Is(err, fs.ErrNotExist) {
		return &TakenOverError{Path: l.Path, Reason: "the lock is gone: it was broken by someone else"}
	}
	if err != nil {
		return fmt.Errorf("cannot release %s: %w", l.Path, err)
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil || !l.dirInfo.Same(st) {
		return &TakenOverError{Path: l.Path, Reason: "the lock directory was replaced: it was broken and taken by someone else"}
	}
	// Look before touching: a record that is not ours is left untouched.
	if data, st, _, err := in.ReadFile("holder", scan.MaxRecord); err != nil || !st.SameFile(l.recInfo) || string(data) != string(l.record) {
		return &TakenOverError{Path: l.Path, Reason: "the record in it is not the one this holder wrote"}
	}
	// The claim names this releaser apart from the holder, so that a
	// release abandoned by a releaser that is gone can be finished.
	claim := fmt.Sprintf("%s.rel.%s.%d", l.name, l.Holder.Token, selfPid)
	// On NFS and the like, a link and an unlink: for a moment the record
	// has both names; then only the claim's.
	err = in.MoveNoReplace("holder", d, claim)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &TakenOverError{Path: l.Path, Reason: "the record vanished: the lock was broken by someone else"}
		}
		return fmt.Errorf("cannot release %s: %w", l.Path, err)
	}
	l.at(ReleaseClaimed)
	back := func(why string) error {
		err := d.MoveNoReplace(claim, in, "holder")
		if err != nil {
			return fmt.Errorf("cannot release %s: %s, and the record could not be put back (%v): it is kept in %s", l.Path, why, err, filepath.Join(l.dir, claim))
		}
		return &TakenOverError{Path: l.Path, Reason: why}
	}
	// The claimed file must be ours, inode and bytes: if the lock changed
	// hands between the look and the claim, it goes straight back.
	data, st, _, err := d.ReadFile(claim, scan.MaxRecord)
	if err != nil || !st.SameFile(l.recInfo) || string(data) != string(l.record) {
		return back("the record in it is not the one this holder wrote")
	}
	// rmdir works by name: check the name still holds the directory this
	// holder published, so that it can never remove someone else's.
	if st, err := d.Lstat(l.name); err != nil || !l.dirInfo.Same(st) {
		return back("the lock directory was replaced while it was being released")
	}
	if err := d.Rmdir(l.name); err != nil {
		if e := back("the lock directory could not be removed"); !errors.As(e, new(*TakenOverError)) {
			return e
		}
		return fmt.Errorf("cannot release %s: %w", l.Path, err)
	}
	l.at(ReleaseRemoved)
	if err := d.Remove(claim); err != nil {
		return fmt.Errorf("released %s, but its claim could not be removed: %w", l.Path, err)
	}
	return nil
}

// ReleaseFor releases the lock at path on behalf of pid, which must be the
// holder the record names, with the start time the record carries: any other
// process gets *NotHolderError and nothing is touched. It is how a process
// other than the one that called Acquire (lockctl release, on behalf of a
// shell) releases a lock.
//
// hook, if given, is called at each release Point (tests only).
func ReleaseFor(path string, pid int, k Kernel, hook ...func(Point)) error {
	k = kernelOr(k)
	abs, dir, name, err := split(path)
	if err != nil {
		return err
	}
	cur, err := scan.ReadOne(dir, name)
	if err != nil {
		return fmt.Errorf("cannot release %s: %w", abs, err)
	}
	if cur != nil && len(cur.Holders) == 0 {
		// The record is already out of the lock: a release of the caller's
		// was interrupted. Finish it, or put the record back and release
		// it again, if it is the caller's.
		done, err := finishOwnRelease(k, cur, pid)
		if done || err != nil {
			return err
		}
		if cur, err = scan.ReadOne(dir, name); err != nil {
			return fmt.Errorf("cannot release %s: %w", abs, err)
		}
	}
	if cur == nil || cur.Kind == scan.KindMissing {
		return fmt.Errorf("cannot release %s: there is no lock there", abs)
	}
	if cur.Format != scan.FormatLockctl {
		return fmt.Errorf("cannot release %s: it is not a lock lockctl took (format %s)", abs, cur.Format)
	}
	if len(cur.Holders) != 1 || cur.Holders[0].Holder == nil {
		// Its record was claimed away (a release or a break under way, or
		// abandoned): there is nothing of the caller's to release.
		return fmt.Errorf("cannot release %s: it holds no usable record (a release or break is under way or was abandoned); 'lockctl doctor %s' says which", abs, abs)
	}
	rec := cur.Holders[0]
	h := *rec.Holder
	start, err := k.Start(pid)
	host := k.Host()
	if err != nil || h.Pid != int64(pid) || h.Start != start || h.BootID != host.BootID || h.PidNS != host.PidNS {
		return &NotHolderError{Path: abs, Pid: pid, Holder: h}
	}
	l := &Lock{Path: abs, Holder: h, dir: dir, name: name, record: rec.Raw, recInfo: rec.Info, dirInfo: cur.Info}
	if len(hook) > 0 {
		l.hook = hook[0]
	}
	return l.Release()
}

// finishOwnRelease finishes a release of pid's lock that was interrupted
// after its record was claimed out of the lock: it reports done when such a
// release was found and finished. A claim holding someone else's record is
// *NotHolderError; anything unfinished is left as it is.
func finishOwnRelease(k Kernel, cur *scan.Lock, pid int) (bool, error) {
	start, err := k.Start(pid)
	if err != nil {
		return false, nil
	}
	host := k.Host()
	mine := false
	for _, c := range cur.Claims {
		h := c.Record.Holder
		if c.Kind != scan.ClaimRelease || h == nil || c.Record.Format() != scan.FormatLockctl {
			continue
		}
		if h.Pid != int64(pid) || h.Start != start || h.BootID != host.BootID || h.PidNS != host.PidNS {
			return false, &NotHolderError{Path: cur.Path, Pid: pid, Holder: *h}
		}
		mine = true
	}
	if !mine {
		return false, nil
	}
	judge := k.ReleaseJudge(host)
	res := judge.Judge(cur)
	if res.Verdict != verdict.Claimed || len(res.Remove) == 0 {
		return false, fmt.Errorf("cannot release %s: a release of it is under way (%s)", cur.Path, res.Reason)
	}
	fixer := &fix.Fixer{Judge: judge, Pid: selfPid}
	switch o := fixer.Fix(res); {
	case o.Action == fix.Restored:
		return false, nil // the record is back: release it as usual
	case o.Action != fix.Removed && !o.Gone:
		return false, fmt.Errorf("cannot finish the interrupted release of %s: %s", cur.Path, o.Reason)
	}
	return true, nil
}

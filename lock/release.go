package lock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

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
	defer l.dropKernel()
	defer func() { l.opens.close(); l.opens = nil }()
	d, err := fsx.OpenDir(l.dir)
	if err != nil {
		return fmt.Errorf("cannot release %s: %w", l.Path, err)
	}
	defer d.Close()
	// Whether anyone opened the lock directory while it was held: read
	// before this release opens it itself.
	if n, ok := l.opens.opens(); !ok || n > 0 {
		l.opensSeen = true
	}
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
	// A lock lives while any process holds its kernel lock: CMD's child
	// that kept fd 3, or a flock(1) on the path. The release removes the
	// record only under a kernel lock of its own, taken afresh, with
	// nobody else waiting for the lock or having it open.
	last, err := l.lastOn(in)
	if err != nil {
		return err
	}
	if last != nil {
		defer last.Close() // only once the lock is removed
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
	l := &Lock{Path: abs, Holder: h, dir: dir, name: name, record: rec.Raw, recInfo: rec.Info, dirInfo: cur.Info, kern: k}
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

// lastOn makes sure this release is the lock's last holder before anything
// is removed. It drops this process's own kernel lock and takes one afresh
// on a new open of the lock directory in: an open file description of its
// own, so that the one a child of CMD inherited, still holding the lock,
// makes it fail. Then it asks who else waits for the lock or has it open:
// a flock(1) blocked on it, one woken by the unlock and not yet listed
// again, or one stopped or about to call flock. If anyone holds, waits or
// has it open, it leaves the lock as it is and returns *StillHeldError:
// the lock lives on in that process, and doctor and acquire judge it by
// that kernel lock until it is closed (then gone). Otherwise it returns
// the file carrying the fresh kernel lock, which the caller closes only
// once the lock is removed, so that a flock(1) that opens the path
// meanwhile waits on it. Where the platform has no flock, it returns nil,
// nil.
func (l *Lock) lastOn(in fsx.Dir) (*os.File, error) {
	k := kernelOr(l.kern)
	l.dropKernel()
	// "." of in: the very directory checked above, whatever its name
	// holds now.
	f, err := in.OpenDirFile(".")
	if err != nil {
		return nil, fmt.Errorf("cannot release %s: %w", l.Path, err)
	}
	switch err := tryFlock(f); {
	case errors.Is(err, errNoKernelLocks):
		f.Close()
		return nil, nil
	case errors.Is(err, errBusy):
		f.Close()
		// The lock table names the kernel lock's taker (this process, or
		// one gone); who holds it now is who has it open.
		o, _ := k.OthersOn(l.dir, l.name, l.dirInfo.Dev, l.dirInfo.Ino)
		return nil, &StillHeldError{Path: l.Path, By: o}
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("cannot release %s: cannot flock it: %w", l.Path, err)
	}
	// Nobody but this release opened the directory since it was flocked
	// (its two opens: Release's and the one above): nobody can have it
	// open to flock it next, so the lock table's waiters are all there is
	// to ask. Otherwise every process's open files are looked at.
	quiet := false
	if n, ok := l.opens.opens(); ok && n == 2 && !l.opensSeen {
		_, quiet = k.(tableWaiters)
	}
	// A reader (doctor, an acquirer looking) has the lock open only for
	// a moment, so one found only open is asked after again, a few
	// times; a waiter the lock table lists is not.
	for try := 1; ; try++ {
		var o []verdict.KernelHolder
		if quiet {
			o = k.(tableWaiters).WaitersOn(l.dir, l.name, l.dirInfo.Dev, l.dirInfo.Ino)
		} else {
			o, _ = k.OthersOn(l.dir, l.name, l.dirInfo.Dev, l.dirInfo.Ino)
		}
		if len(o) == 0 {
			return f, nil
		}
		if try == 5 || slices.ContainsFunc(o, func(h verdict.KernelHolder) bool { return h.How != "open" }) {
			f.Close() // a waiter is granted the lock as it stands
			return nil, &StillHeldError{Path: l.Path, By: o, Waiting: true}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package fix

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// sweepLegacy removes an owner-less lock under --legacy-older-than, by the
// same claim → verify → judge → remove protocol, binding the removal to the
// inode that was judged: the lock file itself, or the empty lock directory
// itself, is what gets claimed.
func (f *Fixer) sweepLegacy(res verdict.Result) Outcome {
	l := res.Lock
	age := time.Since(l.Info.Mtime)
	switch {
	case l.FS.Remote:
		return kept("owner-less, on a network file system (%s), where neither age nor this host's processes prove anything", l.FS.Name)
	case res.Seen == verdict.SeenPartial:
		return kept("owner-less, but not every process's open files could be seen, so a holder may be hiding (%s)", f.Judge.Host.LookHint())
	case res.Seen != verdict.SeenComplete:
		return kept("owner-less, and the kernel was not asked who holds it")
	case age <= f.LegacyOlderThan:
		return skipped("owner-less, but it changed %s ago, within --legacy-older-than %s", age.Round(time.Second), f.LegacyOlderThan)
	case len(l.Claims) > 0 || len(l.Others) > 0 || len(l.Writers) > 0 || len(l.Pending) > 0:
		return kept("owner-less, but side files or other entries sit with it; resolve it by hand")
	}
	if why, nothing := holdsNothing(l); !nothing {
		return kept("%s: age never removes it; inspect it by hand", why)
	}
	d, out := f.reopen(l, true)
	if out != nil {
		return *out
	}
	defer d.Close()
	lockPlace := place{d, l.Name}
	claim := place{d, f.claimName(l, "")}
	if o, ok := fits(l, claim.name); !ok {
		return o
	}
	switch {
	case l.Kind == scan.KindFile && len(l.Holders) == 1:
		return f.legacyFile(l, lockPlace, claim)
	case l.Kind == scan.KindDir && l.Format == scan.FormatEmpty && len(l.Holders) == 0:
		return f.legacyDir(l, lockPlace, claim)
	}
	return kept("the legacy sweep removes only owner-less lock files and empty lock directories")
}

// holdsNothing reports whether l is a lock that holds nothing, the only
// kind age may remove: a lock file that says it was written without an
// owner ("0", FormatNoPid), or an empty lock directory. An empty file is
// not swept: it may be a kernel-lock file nobody holds this instant. Bytes no
// format lockctl reads claim may be another program's live lock or its data
// (GnuPG's pubring.kbx.lock, Cargo.lock), and a known producer's lock is
// removed only by that producer's own rule; why says which. Directories
// pass here: sweepLegacy sweeps only an empty one with no record.
func holdsNothing(l *scan.Lock) (why string, nothing bool) {
	switch {
	case l.Producer != "" || l.KernelLock != "":
		return fmt.Sprintf("owner-less, but it is a lock of %s, removed only by that program's own rule", cmp.Or(l.Producer, l.KernelLock)), false
	case l.Kind != scan.KindFile || len(l.Holders) != 1:
		return "", true // a directory: only an empty one is swept (sweepLegacy)
	case l.Holders[0].Err != nil:
		return fmt.Sprintf("owner-less, but its bytes are not a record lockctl reads (%v), so they may be another program's lock or data", l.Holders[0].Err), false
	case l.Format == scan.FormatEmpty:
		return "owner-less, but an empty file may be a kernel-lock file (flock(1) leaves one behind) that a process is about to lock, and removing it lets a second process in beside the first", false
	case l.Format != scan.FormatNoPid:
		return fmt.Sprintf("owner-less, but it holds %s bytes, not nothing", l.Format), false
	}
	return "", true
}

// legacyStill judges a claimed owner-less lock again: still owner-less, and
// the kernel, asked again, shows no holder of that inode.
func (f *Fixer) legacyStill(again *scan.Lock) (string, bool) {
	r := f.Judge.Judge(again)
	switch {
	case r.Verdict != verdict.Ownerless:
		return fmt.Sprintf("judged again, it is %s (%s)", r.Verdict, r.Reason), false
	case r.Seen != verdict.SeenComplete:
		return "judged again, not every process's open files could be seen, so a holder may be hiding", false
	}
	return "", true
}

func (f *Fixer) legacyFile(l *scan.Lock, lock, claim place) Outcome {
	rec, out := f.bind(l, l.Holders[0], lock, claim)
	if out != nil {
		return *out
	}
	f.hook(BeforeJudge, l)
	again := *l
	again.Holders = []scan.Record{rec}
	if why, ok := f.legacyStill(&again); !ok {
		return f.rollback(claim, lock, why)
	}
	f.hook(BeforeRemove, l)
	if err := claim.at.Remove(claim.name); err != nil {
		return kept("cannot remove the claimed lock %s: %v", claim.path(), err)
	}
	return Outcome{Action: Removed, Reason: "owner-less and unchanged for longer than --legacy-older-than, with no holder the kernel knows of: claimed, checked, judged again and removed"}
}

func (f *Fixer) legacyDir(l *scan.Lock, lock, claim place) Outcome {
	// 1. Claim the directory itself: from here on, whatever is done to it
	// is done to the inode judged, wherever its name goes.
	f.hook(BeforeClaim, l)
	err := lock.at.RenameNoReplace(lock.name, claim.at, claim.name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return alreadyGone()
	case errors.Is(err, fsx.ErrNoReplaceUnsupported):
		return kept("this file system cannot rename without replacing, so lockctl does not sweep here")
	case err != nil:
		return kept("cannot claim the lock directory: %v", err)
	}
	// 2. Verify: the same directory, and still empty.
	f.hook(BeforeVerify, l)
	cd, err := claim.at.OpenDir(claim.name)
	if err != nil {
		return f.rollback(claim, lock, fmt.Sprintf("cannot open the claimed directory: %v", err))
	}
	defer cd.Close()
	st, err := cd.Stat()
	if err != nil || !l.Info.Same(st) {
		return f.rollback(claim, lock, "the directory changed since it was judged")
	}
	if ents, err := cd.List(); err != nil || len(ents) > 0 {
		return f.rollback(claim, lock, "the directory is no longer empty")
	}
	if !st.Mtime.Equal(l.Info.Mtime) {
		// Touched since it was judged: a holder that proves itself alive
		// by refreshing the mtime (npm's proper-lockfile) did so.
		return f.rollback(claim, lock, "the directory's modification time moved since it was judged: a holder refreshing it is alive")
	}
	// 3. Judge again, with the kernel asked again.
	f.hook(BeforeJudge, l)
	if why, ok := f.legacyStill(l); !ok {
		return f.rollback(claim, lock, why)
	}
	// 4. Remove: rmdir fails if anything was put inside meanwhile.
	f.hook(BeforeRemove, l)
	if err := claim.at.Rmdir(claim.name); err != nil {
		return f.rollback(claim, lock, fmt.Sprintf("cannot remove the claimed directory: %v", err))
	}
	return Outcome{Action: Removed, Reason: "an empty lock directory, unchanged for longer than --legacy-older-than, with no holder the kernel knows of: claimed, checked, judged again and removed"}
}

package fix

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
)

// BeforeUnlink is the point of a claim by link(2) where the lock file has
// both names, checked to be the judged inode with no other: its own name
// is about to be removed (linkClaim).
const BeforeUnlink Step = "unlink"

// renameClaim is step 1 where the file system can rename without
// replacing.
func (f *Fixer) renameClaim(from, claim place) error {
	if f.noRenameNoReplace {
		return fmt.Errorf("rename %s: %w", from.path(), fsx.ErrNoReplaceUnsupported)
	}
	return from.at.RenameNoReplace(from.name, claim.at, claim.name)
}

// linkable says whether the record at from can be claimed by link(2)
// where RENAME_NOREPLACE is refused: only a lock that is a regular file
// and its own record. A directory cannot be linked, and a record inside or
// beside a lock directory would leave the directory to be removed by name.
func linkable(l *scan.Lock, from place) bool {
	return l.Kind == scan.KindFile && from.name == l.Name
}

// linkClaim is step 1 on a file system without RENAME_NOREPLACE (NFS),
// the way liblockfile makes an NFS-safe dotlock (lockfile.c,
// lockfile_create_save_tmplock): link the lock to the claim name, which
// never replaces anything; check by the claim's own Stat that it is the
// judged inode and that it has exactly two names, the lock's and the
// claim's; check the lock's name still names that inode; remove the lock's
// name; check the claim is then the inode's only name. A nil outcome means
// the claim is held as after a rename; otherwise nothing of the lock was
// changed, or the outcome says what was. docs/fix-protocol.md argues why
// it is exclusive, and what window remains.
func (f *Fixer) linkClaim(l *scan.Lock, judged scan.Record, from, claim place) *Outcome {
	err := from.at.Link(from.name, claim.at, claim.name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Over NFS, link(2) may fail though it linked (a retransmitted
		// request answered EEXIST), as liblockfile warns: the claim name,
		// ours alone, tells.
		if st, e := claim.at.Lstat(claim.name); e == nil && judged.Info.SameFile(st) {
			err = nil
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		o := skipped("another process claimed or released it first")
		if _, err := from.at.Lstat(from.name); errors.Is(err, fs.ErrNotExist) {
			o = alreadyGone()
		}
		return &o
	case err != nil:
		o := kept("this file system cannot rename without replacing (no RENAME_NOREPLACE, e.g. NFS), and the claim by link(2) failed: %v", err)
		return &o
	}
	// Our claim name is ours alone (our pid and a random number): removing
	// it removes a name we made, never the lock's.
	drop := func(o Outcome) *Outcome {
		if err := claim.at.Remove(claim.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			o = Outcome{Action: Kept, Reason: fmt.Sprintf("%s, and the claim %s could not be removed (%v): remove it by hand", o.Reason, claim.path(), errors.Unwrap(err)), Conflict: claim.path()}
		}
		return &o
	}
	// Two names, the lock's and ours: a third is another sweeper's claim
	// under way, and of two sweepers that linked, each sees three and
	// leaves the lock to the other or to a later run.
	if why := linkedAs(l, judged, claim, 2); why != "" {
		return drop(skipped("%s; nothing was removed: run lockctl doctor again", why))
	}
	// The lock's name must still name the judged inode right before it is
	// removed: a live acquirer may have made a new lock there since the
	// judgement. Between this look and the unlink a window remains
	// (docs/fix-protocol.md).
	if cur, err := from.at.Lstat(from.name); err != nil || !judged.Info.SameFile(cur) {
		return drop(skipped("the lock was replaced or removed while it was being claimed; nothing of it was removed"))
	}
	f.hook(BeforeUnlink, l)
	if err := from.at.Remove(from.name); err != nil {
		return drop(kept("cannot remove the lock's name after linking its claim: %v", err))
	}
	// Only our name is left: no other sweeper holds a claim of it.
	if why := linkedAs(l, judged, claim, 1); why != "" {
		o := f.rollback(claim, from, why)
		return &o
	}
	return nil
}

// linkedAs checks, by the claim's own Stat, that the claim is the judged
// file with n names, or says how it is not. The judged file is its inode
// (with its birth time, where the file system keeps one), size, mtime and
// bytes: a new lock made where the judged one was unlinked may have its
// inode number.
func linkedAs(l *scan.Lock, judged scan.Record, claim place, n uint64) string {
	data, st, truncated, err := readClaimed(l, claim)
	switch {
	case err != nil:
		return fmt.Sprintf("cannot read the claim made by link(2): %v", err)
	case !judged.Info.Same(st) || st.Size != judged.Info.Size || !st.Mtime.Equal(judged.Info.Mtime),
		truncated || !bytes.Equal(data, judged.Raw):
		return "the claim made by link(2) is not the file judged (the lock may have changed hands)"
	case st.Nlink != n:
		return fmt.Sprintf("the claimed file has %d names where %d were expected: another process is claiming or taking it", st.Nlink, n)
	}
	return ""
}

// Package fix removes locks whose holder is provably gone, and finishes
// breaks and releases that were abandoned, each removal bound to the holder
// that was judged.
//
// The protocol, for every lock, is claim → verify → judge → remove:
//
//  1. Claim: rename the holder record (or the lock file itself) to a claim
//     name of our own, never replacing anything. Exactly one of any number of
//     racing sweepers can rename a given file; the others find it gone.
//  2. Verify: the claimed file must be the very inode, holding the very
//     bytes, that were judged. If the lock changed hands between the
//     judgement and the claim, the file we renamed is not the file we read.
//  3. Judge again, asking the kernel afresh, the claimed record: its holder
//     must still be gone.
//  4. Remove the lock, then the claim.
//
// Any failure after the claim puts the record back with
// renameat2(RENAME_NOREPLACE), never a plain rename, so a record cannot be
// restored over a new owner's. If something new already stands there, the
// claim is kept, named in the outcome, and never deleted.
//
// Every step works relative to directory descriptors opened without
// following symbolic links, so a link swapped into a path cannot redirect a
// removal out of the registry. docs/fix-protocol.md has the argument and the
// risks this does not close.
package fix

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/internal/shellquote"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Action is what --fix did to one lock.
type Action string

// The actions.
const (
	Removed  Action = "removed"  // the lock (or an abandoned claim) was removed
	Restored Action = "restored" // an abandoned claim of a live record was put back
	Kept     Action = "kept"     // eligible, but a check failed and it was left as it was
	Skipped  Action = "skipped"  // not eligible, or another process dealt with it first
)

// Outcome is what happened to one lock.
type Outcome struct {
	Action Action
	Reason string
	// Conflict names a claim file that holds a record which could not be put
	// back because something new stands in its place. It is never deleted.
	Conflict string
	// Gone is set when the lock was found no longer to exist (another
	// process removed it first): skipped, but nothing is left to attend to.
	Gone bool
}

// Step names the points between the steps of the protocol. Tests use them
// (through Fixer.Hook) to change the world at exactly that point.
type Step string

// The points at which Hook is called.
const (
	BeforeOpen   Step = "open"   // judged; the registry directory not yet reopened
	BeforeCheck  Step = "check"  // judged; the record not yet read again before its claim
	BeforeClaim  Step = "claim"  // read again and unchanged; nothing touched yet
	BeforeVerify Step = "verify" // claimed; not yet verified
	BeforeJudge  Step = "judge"  // verified; not yet judged again
	BeforeRemove Step = "remove" // judged again; not yet removed
)

// Fixer sweeps judged locks.
type Fixer struct {
	// Judge judges claimed records again. Its probe must not cache: the
	// second judgement is a new question to the kernel.
	Judge *verdict.Judge
	// Pid is this process's pid, written into claim names so that other
	// sweepers can tell a claim under way from an abandoned one.
	Pid int
	// Hook, when set, is called at each Step. Tests only.
	Hook func(Step, *scan.Lock)
	// LegacyOlderThan, when positive, lets Fix also sweep owner-less locks
	// (lock files without a usable record, empty lock directories) that
	// have not changed for longer than this, on a local file system, that
	// the kernel shows no process holding. It is the only place where age
	// decides anything, and only because the operator asked.
	LegacyOlderThan time.Duration
	// Rejudge, when not nil, lets Fix sweep a lock judged gone on another
	// host (Result.Remote, doctor --fix --via): the claimed record is
	// judged again by that host, and only its gone removes (via.go).
	Rejudge Rejudge
	// again, when not nil, judges a claimed record again in place of
	// Judge (set by sweepVia on a copy of the Fixer).
	again func(l *scan.Lock, c place) verdict.Result
	// noRenameNoReplace makes every claim take the link(2) way, as on a
	// file system without RENAME_NOREPLACE. Tests only.
	noRenameNoReplace bool
}

// New returns a Fixer that judges claimed records again with judge, which
// must ask the kernel afresh on every question: internal/cli hands it
// judges.Sweep, the one judge made for this (it says why it caches
// nothing). A nil judge fails closed: it judges with verdict.NoProbe, so
// no holder is ever gone again and nothing is removed.
func New(judge *verdict.Judge) *Fixer {
	if judge == nil {
		judge = &verdict.Judge{Probe: verdict.NoProbe{}}
	}
	return &Fixer{Judge: judge, Pid: os.Getpid()}
}

func (f *Fixer) hook(s Step, l *scan.Lock) {
	if f.Hook != nil {
		f.Hook(s, l)
	}
}

func kept(format string, args ...any) Outcome {
	return Outcome{Action: Kept, Reason: fmt.Sprintf(format, args...)}
}

func alreadyGone() Outcome {
	return Outcome{Action: Skipped, Reason: "it was already removed by another process", Gone: true}
}

func skipped(format string, args ...any) Outcome {
	return Outcome{Action: Skipped, Reason: fmt.Sprintf(format, args...)}
}

// Fix acts on one judged lock: it sweeps a gone lock, finishes or restores
// an abandoned claim, and leaves everything else alone. It is safe to run
// concurrently with other Fixers and with live acquirers over the same
// registry: each lock is removed at most once, and a lock that changed hands
// since res was judged is left with its new owner.
func (f *Fixer) Fix(res verdict.Result) Outcome {
	switch {
	case res.Remote != "" && f.Rejudge != nil:
		return f.sweepVia(res)
	case res.Remote != "":
		// Judged on its own host: this host's second judgement, which a
		// removal rests on, would find it foreign again.
		return kept("judged on host %s: lockctl removes such a lock only where it is judged; run 'lockctl doctor --fix %s' on %s", res.Remote, shellquote.Quote(res.Lock.Path), res.Remote)
	case res.Verdict == verdict.Gone:
		return f.withTemps(res, f.sweep(res))
	case res.Verdict == verdict.Free && res.Lock.Kind == scan.KindMissing && len(res.Temps) > 0:
		// No lock, only its producer's temporaries.
		return f.onlyTemps(res)
	case res.Verdict == verdict.Claimed && onlyBuilds(res.Lock):
		// No lock, only builds: the abandoned ones are debris.
		want := len(res.Debris) / 2
		if want == 0 {
			return skipped("only builds of acquirers still waiting remain")
		}
		if n := f.Debris(res); n < want {
			return kept("removed %d of %d abandoned builds; the others changed or were taken first", n, want)
		}
		return Outcome{Action: Removed, Reason: fmt.Sprintf("removed %d abandoned %s, left by acquirers that are gone", want, plural(want, "build", "builds")), Gone: len(res.Lock.Claims) == want}
	case res.Verdict == verdict.Claimed && len(res.Remove) > 0:
		return f.finish(res)
	case res.Verdict == verdict.Claimed:
		return skipped("the claim is under way or cannot be resolved safely")
	case res.Verdict == verdict.Ownerless && f.LegacyOlderThan > 0:
		return f.sweepLegacy(res)
	}
	return skipped("--fix removes only gone locks and abandoned claims; this one is %s", res.Verdict)
}

// fits keeps a lock whose claim's name would be longer than its file
// system takes (a lock named near NAME_MAX by another tool; lockctl
// refuses to take such names): the claim would fail, and the operator is
// better told why and what to do.
func fits(l *scan.Lock, claim string) (Outcome, bool) {
	if m := l.FS.NameMax; m > 0 && len(claim) > m {
		return kept("its name is %d bytes, so the claim lockctl renames it to first (%d bytes) would be longer than this file system takes (%d): it cannot be removed safely by lockctl; remove it by hand, with the commands shown, once its holder is known to be gone", len(l.Name), len(claim), m), false
	}
	return Outcome{}, true
}

// claimName names a claim of this fixer's. It ends with the fixer's pid
// namespace, so that a reader in another namespace judges the claim's maker
// there, and never takes a pid of this namespace for one of its own.
func (f *Fixer) claimName(l *scan.Lock, token string) string {
	ns := scan.NSSuffix(f.Judge.Host.PidNS)
	if token != "" {
		return fmt.Sprintf("%s.dead.%s.%d%s", l.Name, token, f.Pid, ns)
	}
	return fmt.Sprintf("%s.dead.%d.%d%s", l.Name, f.Pid, rand.Uint32(), ns)
}

// place is a name in an open directory.
type place struct {
	at   fsx.Dir
	name string
}

func (p place) path() string { return p.at.Join(p.name) }

// reopen opens the judged lock's directory without following a symbolic
// link anywhere in its path, and checks that the lock is still the entry
// judged (and, with unchanged, not modified since). The caller closes the
// directory; when the outcome is not nil, there is nothing to close.
func (f *Fixer) reopen(l *scan.Lock, unchanged bool) (fsx.Dir, *Outcome) {
	f.hook(BeforeOpen, l)
	d, err := fsx.OpenDir(l.Dir)
	if err != nil {
		o := kept("cannot open the registry directory: %v", err)
		return fsx.Dir{}, &o
	}
	cur, err := d.Lstat(l.Name)
	var o Outcome
	switch {
	case errors.Is(err, fs.ErrNotExist):
		o = alreadyGone()
	case err != nil:
		o = kept("cannot examine the lock: %v", err)
	case !l.Info.Same(cur):
		o = skipped("the lock was replaced since it was judged; run lockctl doctor again")
	case unchanged && !cur.Mtime.Equal(l.Info.Mtime):
		o = skipped("the lock changed since it was judged; run lockctl doctor again")
	default:
		return d, nil
	}
	d.Close()
	return fsx.Dir{}, &o
}

func (f *Fixer) sweep(res verdict.Result) Outcome {
	l := res.Lock
	if res.Holder != nil && res.Holder.Break == "no" {
		return kept("the holder asked never to be broken automatically (break no)")
	}
	if why := scan.InPlace(l); why != "" {
		return skipped("%s", why)
	}
	if why := scan.KeptWhy(l); why != "" {
		return kept("%s", why)
	}
	if len(l.Holders) != 1 || l.Holders[0].Holder == nil {
		return kept("a gone lock with %d holder records is not swept automatically", len(l.Holders))
	}
	d, out := f.reopen(l, false)
	if out != nil {
		return *out
	}
	defer d.Close()
	judged := l.Holders[0]
	lockDir := place{d, l.Name}
	claim := func(token string) place { return place{d, f.claimName(l, token)} }
	if l.Kind == scan.KindFile || l.Kind == scan.KindSymlink && l.Producer != "" {
		// The lock file (or a producer's link) is its own record:
		// claiming it frees the lock.
		return f.claimJudgeRemove(l, judged, lockDir, claim(""), nil)
	}
	// A lock directory: its format says where its record sits.
	switch rec := scan.DirRecordOf(l); {
	case rec != nil && rec.Beside != "":
		from := place{d, l.Name + rec.Beside}
		return f.claimJudgeRemove(l, judged, from, claim(""), &lockDir)
	case rec != nil && rec.Inside != nil:
		if n := len(l.Writers) + len(l.Pending) + len(l.Others); n > 0 {
			return kept("the lock directory holds %d entries besides its holder record", n)
		}
		in, err := d.OpenDir(l.Name)
		if errors.Is(err, fs.ErrNotExist) {
			return alreadyGone()
		}
		if err != nil {
			return kept("cannot open the lock directory: %v", err)
		}
		defer in.Close()
		if st, err := in.Stat(); err != nil || !l.Info.Same(st) {
			return skipped("the lock was replaced since it was judged; run lockctl doctor again")
		}
		from, token := place{in, strings.TrimPrefix(judged.File, l.Name+"/")}, ""
		if rec.TokenInClaim {
			token = judged.Holder.Token
		}
		return f.claimJudgeRemove(l, judged, from, claim(token), &lockDir)
	}
	return kept("lockctl does not know how to remove a %s %s lock safely", l.Format, l.Kind)
}

// claimJudgeRemove runs the protocol on one record: claim it from `from` to
// c (beside the lock), verify it is what was judged, judge it again, then
// remove the lock directory (when dir is not nil) and the claim.
func (f *Fixer) claimJudgeRemove(l *scan.Lock, judged scan.Record, from, c place, dir *place) Outcome {
	if o, ok := fits(l, c.name); !ok {
		return o
	}
	rec, out := f.bind(l, judged, from, c)
	if out != nil {
		return *out
	}
	back := func(format string, args ...any) Outcome { return f.rollback(c, from, fmt.Sprintf(format, args...)) }

	// 3. Judge again. The claimed record must still name a gone holder,
	// with the kernel asked afresh.
	f.hook(BeforeJudge, l)
	again := *l
	again.Holders = []scan.Record{rec}
	again.Claims = nil
	if r := f.judgeAgain(&again, c); r.Verdict != verdict.Gone {
		return back("judged again, the holder is %s (%s)", r.Verdict, r.Reason)
	}

	// 4. Remove. While we hold the claim no one else can claim this
	// holder, and for a directory lock nobody can take the lock until the
	// directory is gone: the directory is removed only if it is still the
	// one judged, and only if it is empty.
	f.hook(BeforeRemove, l)
	// The claimed record, read again from the claim's name right before
	// the removal: a writer that opened it before the claim can still
	// write to it, and only bytes read now, with its ctime unchanged
	// since the claim, say the removal is still of the record judged.
	if why := changed(l, judged, c, rec.Info); why != "" {
		return back("after its claim, %s", strings.TrimPrefix(why, "the record "))
	}
	if dir != nil {
		cur, err := dir.at.Lstat(dir.name)
		if err != nil || !l.Info.Same(cur) {
			return back("the lock directory changed while it was being broken")
		}
		if err := dir.at.Rmdir(dir.name); err != nil {
			if fsx.IsNotEmpty(err) {
				return back("the lock directory is no longer empty")
			}
			return back("cannot remove the lock directory: %v", err)
		}
	}
	if err := c.at.Remove(c.name); err != nil {
		return Outcome{Action: Removed, Reason: fmt.Sprintf("%s; but its claim %s could not be removed: %v", goneWhy(rec), c.path(), err)}
	}
	return Outcome{Action: Removed, Reason: goneWhy(rec)}
}

func goneWhy(rec scan.Record) string {
	if rec.Holder != nil {
		return fmt.Sprintf("pid %s was gone: claimed its record, checked it, judged it again and removed the lock", rec.Holder.PidText)
	}
	return "claimed, checked, judged again and removed"
}

// bind performs steps 1 and 2: it renames from to claim without replacing
// anything, then checks that the claimed file is the inode and the bytes
// that were judged. On success the caller owns the claim and gets the record
// as it now stands; on failure nothing is left changed (or the outcome says
// why not).
func (f *Fixer) bind(l *scan.Lock, judged scan.Record, from, claim place) (scan.Record, *Outcome) {
	// 0. Read it again: a record rewritten in place since it was judged
	// (a live process taking the stale lock with O_TRUNC, as shell and
	// cron code does) keeps its inode, so only its bytes, size, mtime and
	// ctime (which no program sets back) tell. Nothing is claimed then:
	// the claim would free the name under its new holder. This narrows
	// the window, it cannot close it (docs/fix-protocol.md).
	f.hook(BeforeCheck, l)
	if why := changed(l, judged, from, judged.Info); why != "" {
		o := skipped("%s; nothing was touched: run lockctl doctor again", why)
		if _, err := claim.at.Lstat(l.Name); errors.Is(err, fs.ErrNotExist) {
			o = alreadyGone() // another sweeper removed it: nothing to attend to
		}
		return scan.Record{}, &o
	}
	// 1. Claim. Before this rename, the lock may change hands at any time;
	// after it, no one else can claim this record, and the record we judged
	// is either ours or gone.
	f.hook(BeforeClaim, l)
	err := f.renameClaim(from, claim)
	if errors.Is(err, fsx.ErrNoReplaceUnsupported) && linkable(l, from) {
		if o := f.linkClaim(l, judged, from, claim); o != nil {
			return scan.Record{}, o
		}
		err = nil
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		o := skipped("another process claimed or released it first")
		if _, err := claim.at.Lstat(l.Name); errors.Is(err, fs.ErrNotExist) {
			o = alreadyGone()
		}
		return scan.Record{}, &o
	case errors.Is(err, fsx.ErrNoReplaceUnsupported):
		o := kept("this file system cannot rename without replacing (no RENAME_NOREPLACE, e.g. NFS), so lockctl does not sweep here")
		return scan.Record{}, &o
	case err != nil:
		o := kept("cannot claim the record: %v", err)
		if errors.Is(err, fs.ErrPermission) {
			o = kept("cannot claim the record: this user may not rename in %s (%v): run lockctl doctor --fix as the lock's owner or as root", l.Dir, errors.Unwrap(err))
		}
		return scan.Record{}, &o
	}
	// 2. Verify: the claimed file must be the one judged, byte for byte.
	// A lock that changed hands between the judgement and the claim fails
	// here, and its new owner's record goes straight back.
	f.hook(BeforeVerify, l)
	data, st, truncated, err := readClaimed(l, claim)
	var why string
	switch {
	case err != nil:
		why = fmt.Sprintf("cannot read the claimed record: %v", err)
	case truncated && !scan.BoundByFirstBytes(l) || !bytes.Equal(data, judged.Raw):
		// (A vim swap runs past MaxRecord: its first MaxRecord bytes and
		// its inode bind the removal to it.)
		why = "the record changed since it was judged (the lock may have changed hands)"
	case !judged.Info.SameFile(st):
		why = "the record was replaced since it was judged (the lock may have changed hands)"
	}
	if why != "" {
		o := f.rollback(claim, from, why)
		return scan.Record{}, &o
	}
	rec := judged
	rec.File, rec.Info = claim.name, st
	return rec, nil
}

// changed reads the record at p again and says how it differs from the
// judged one, whose entry was then was (its inode, size, mtime and ctime),
// or "" if it does not.
func changed(l *scan.Lock, judged scan.Record, p place, was fsx.Stat) string {
	data, st, truncated, err := readClaimed(l, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "the record is gone since it was judged (another process claimed or released it)"
	case err != nil:
		return fmt.Sprintf("cannot read the record again: %v", err)
	case !was.SameFile(st):
		return "the record was replaced since it was judged (the lock may have changed hands)"
	case truncated && !scan.BoundByFirstBytes(l) || !bytes.Equal(data, judged.Raw),
		st.Size != was.Size, !st.Mtime.Equal(was.Mtime), !st.Ctime.Equal(was.Ctime):
		return "the record was written since it was judged (the lock may have changed hands)"
	}
	return ""
}

// readClaimed reads a claimed record: a file's bytes, or a link's target
// (never following it), with the Stat of the very entry read.
func readClaimed(l *scan.Lock, claim place) (data []byte, st fsx.Stat, truncated bool, err error) {
	if l.Kind != scan.KindSymlink {
		return claim.at.ReadFile(claim.name, scan.MaxRecord)
	}
	if st, err = claim.at.Lstat(claim.name); err != nil {
		return nil, st, false, err
	}
	if st.Mode&fs.ModeSymlink == 0 {
		return nil, st, false, fmt.Errorf("%s is no longer a symbolic link", claim.path())
	}
	t, err := claim.at.Readlink(claim.name, scan.MaxRecord)
	return []byte(t), st, false, err
}

// rollback puts the claimed record back where it was, never replacing
// anything that now stands there. If it cannot, the claim stays where it is,
// named in the outcome as a conflict for a person to resolve.
func (f *Fixer) rollback(claim, to place, why string) Outcome {
	err := claim.at.MoveNoReplace(claim.name, to.at, to.name)
	if err == nil {
		return kept("%s; the record was put back", why)
	}
	reason := fmt.Sprintf("%s, and the record could not be put back at %s (%v): it is kept in %s; inspect both by hand",
		why, to.path(), errors.Unwrap(err), claim.path())
	if errors.Is(err, fs.ErrExist) {
		reason = fmt.Sprintf("%s, and something new now stands at %s: the claimed record is kept in %s; inspect both by hand",
			why, to.path(), claim.path())
	}
	return Outcome{Action: Kept, Reason: reason, Conflict: claim.path()}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

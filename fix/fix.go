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
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
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
	BeforeClaim  Step = "claim"  // judged; nothing touched yet
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
	case res.Verdict == verdict.Gone:
		return f.sweep(res)
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
	if v := res.Lock.Vim; v != nil && v.Dirty {
		return kept("a vim swap file with unsaved changes is never removed: recover them with 'vim -r %s'", v.File)
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
	switch {
	case l.Kind == scan.KindFile, l.Kind == scan.KindSymlink && l.Producer != "":
		// The lock file (or a producer's link) is its own record:
		// claiming it frees the lock.
		return f.claimJudgeRemove(l, judged, lockDir, claim(""), nil)
	case l.Kind == scan.KindDir && l.Format == scan.FormatRegistryA:
		from := place{d, l.Name + ".holder"}
		return f.claimJudgeRemove(l, judged, from, claim(""), &lockDir)
	case l.Kind == scan.KindDir && (l.Format == scan.FormatRegistryB || l.Format == scan.FormatLockctl):
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
		from := place{in, strings.TrimPrefix(judged.File, l.Name+"/")}
		return f.claimJudgeRemove(l, judged, from, claim(judged.Holder.Token), &lockDir)
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
	if r := f.Judge.Judge(&again); r.Verdict != verdict.Gone {
		return back("judged again, the holder is %s (%s)", r.Verdict, r.Reason)
	}

	// 4. Remove. While we hold the claim no one else can claim this
	// holder, and for a directory lock nobody can take the lock until the
	// directory is gone: the directory is removed only if it is still the
	// one judged, and only if it is empty.
	f.hook(BeforeRemove, l)
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
	// 1. Claim. Before this rename, the lock may change hands at any time;
	// after it, no one else can claim this record, and the record we judged
	// is either ours or gone.
	f.hook(BeforeClaim, l)
	err := from.at.RenameNoReplace(from.name, claim.at, claim.name)
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
	case truncated && l.Producer != scan.ProducerVim || !bytes.Equal(data, judged.Raw):
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

// finish completes an abandoned break, release or publish (a claimed lock
// whose maker is gone): it restores a claimed record whose holder is alive,
// or removes the lock and the claim when that holder is gone too.
func (f *Fixer) finish(res verdict.Result) Outcome {
	l := res.Lock
	restoreTo, targets, ok := sidesToResolve(res)
	if !ok {
		return kept("cannot tell which side file to resolve")
	}
	f.hook(BeforeOpen, l)
	d, err := fsx.OpenDir(l.Dir)
	if err != nil {
		return kept("cannot open the registry directory: %v", err)
	}
	defer d.Close()
	sc := &sideClaims{f: f, l: l, d: d}
	defer sc.close()
	if restoreTo != "" {
		from, sub, err := sc.open(targets[0])
		if err != nil {
			return kept("cannot open the side file's directory: %v", err)
		}
		if sub != nil {
			defer from.at.Close()
		}
		return f.restore(l, *targets[0], from, restoreTo)
	}
	if out := sc.claimAll(targets); out != nil {
		return *out
	}
	f.hook(BeforeJudge, l)
	again := *l
	again.Holders = nil
	again.Claims = nil
	for _, h := range sc.hs {
		again.Claims = append(again.Claims, scan.Claim{Kind: h.c.Kind, By: h.c.By, Maker: h.c.Maker, NS: h.c.NS, Record: h.rec})
	}
	r := f.Judge.Judge(&again)
	if r.Verdict != verdict.Claimed || len(r.Remove) == 0 || r.Remove[0].Op == verdict.OpRestore {
		return sc.back("judged again, it is not abandoned with every claimed holder gone: %s", r.Reason)
	}
	f.hook(BeforeRemove, l)
	return sc.remove(res, targets)
}

// sidesToResolve finds the side files a claimed lock's remedy resolves: one
// to put back (restoreTo is where), or every one it removes. ok is false
// when a step names no side file of the lock, or a record that could not be
// read.
func sidesToResolve(res verdict.Result) (restoreTo string, targets []*scan.Claim, ok bool) {
	l := res.Lock
	for _, s := range res.Remove {
		if s.Op != verdict.OpRestore && s.Op != verdict.OpRemove {
			continue
		}
		if s.Op == verdict.OpRestore {
			restoreTo = s.To
		}
		var c *scan.Claim
		for i := range l.Claims {
			if filepath.Join(l.Dir, l.Claims[i].Record.File) == s.Path {
				c = &l.Claims[i]
			}
		}
		if c == nil || c.Record.Holder == nil {
			return "", nil, false
		}
		targets = append(targets, c)
	}
	return restoreTo, targets, len(targets) > 0 && (restoreTo == "" || len(targets) == 1)
}

// sideClaims are the abandoned side files of one lock that a sweeper has
// claimed for itself, in the order it claimed them. It is not safe for
// concurrent use.
type sideClaims struct {
	f  *Fixer
	l  *scan.Lock
	d  fsx.Dir // the lock's directory
	hs []heldSide
}

// heldSide is one side file claimed: where it was, where it is now, and
// the directory an unpublished record was built in.
type heldSide struct {
	c    *scan.Claim
	from place
	mine place
	rec  scan.Record
	sub  *place
}

// open finds where side file c is: beside the lock, or (an unpublished
// record) inside its build directory, which sub then names.
func (sc *sideClaims) open(c *scan.Claim) (from place, sub *place, err error) {
	from = place{sc.d, c.Record.File}
	if d := filepath.Dir(c.Record.File); d != "." {
		sd, err := sc.d.OpenDir(d)
		if err != nil {
			return place{}, nil, err
		}
		from = place{sd, filepath.Base(c.Record.File)}
		sub = &place{sc.d, d}
	}
	return from, sub, nil
}

func (sc *sideClaims) close() {
	for _, h := range sc.hs {
		if h.sub != nil {
			h.from.at.Close()
		}
	}
}

// claimAll claims each abandoned side file for this sweeper, so that of
// several sweepers only one finishes them, and so that the lock directory
// they guard can only be removed by the one that holds them all. If one
// cannot be claimed, those claimed so far go back.
func (sc *sideClaims) claimAll(targets []*scan.Claim) *Outcome {
	for _, c := range targets {
		from, sub, err := sc.open(c)
		if err != nil {
			o := sc.back("cannot open the side file's directory: %v", err)
			return &o
		}
		mine := place{sc.d, sc.f.claimName(sc.l, "")}
		rec, out := sc.f.bind(sc.l, c.Record, from, mine)
		if out != nil {
			if sub != nil {
				from.at.Close()
			}
			if len(sc.hs) == 0 {
				return out
			}
			o := sc.back("%s", out.Reason)
			return &o
		}
		sc.hs = append(sc.hs, heldSide{c: c, from: from, mine: mine, rec: rec, sub: sub})
	}
	return nil
}

// back puts back, newest first, every side file claimed so far.
func (sc *sideClaims) back(format string, args ...any) Outcome {
	why := fmt.Sprintf(format, args...)
	out := kept("%s; the side files were put back", why)
	for i := len(sc.hs) - 1; i >= 0; i-- {
		if o := sc.f.rollback(sc.hs[i].mine, sc.hs[i].from, why); o.Conflict != "" {
			out = o
		}
	}
	return out
}

// remove removes the lock directory where the remedy says to (if it is
// still the one judged), then every claimed side file.
func (sc *sideClaims) remove(res verdict.Result, targets []*scan.Claim) Outcome {
	l := sc.l
	if removesLock(res, l) {
		cur, err := sc.d.Lstat(l.Name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil || !l.Info.Same(cur):
			return sc.back("the lock directory changed while the claim was being finished")
		default:
			if err := sc.d.Rmdir(l.Name); err != nil {
				return sc.back("cannot remove the lock directory: %v", err)
			}
		}
	}
	var left []string
	for _, h := range sc.hs {
		if err := h.mine.at.Remove(h.mine.name); err != nil {
			left = append(left, h.mine.path())
		}
		if h.sub != nil {
			if err := h.sub.at.Rmdir(h.sub.name); err != nil {
				left = append(left, h.sub.path())
			}
		}
	}
	what := fmt.Sprintf("the abandoned %s", targets[0].Kind)
	if len(sc.hs) > 1 {
		what = fmt.Sprintf("%d abandoned side files", len(sc.hs))
	}
	if len(left) > 0 {
		return Outcome{Action: Removed, Reason: fmt.Sprintf("finished %s; but could not remove %s", what, strings.Join(left, ", "))}
	}
	return Outcome{Action: Removed, Reason: fmt.Sprintf("finished %s: the makers and the holders claimed are all gone", what)}
}

// removesLock reports whether the judged remedy removes the lock directory
// itself (an abandoned break does; an abandoned publish beside a lock that
// someone else holds does not).
func removesLock(res verdict.Result, l *scan.Lock) bool {
	for _, s := range res.Remove {
		if s.Op == verdict.OpRmdir && s.Path == l.Path {
			return true
		}
	}
	return false
}

// restore puts an abandoned claim of a live holder's record back at to.
func (f *Fixer) restore(l *scan.Lock, c scan.Claim, from place, to string) Outcome {
	dst := place{from.at, filepath.Base(to)}
	if filepath.Dir(to) == l.Path {
		in, err := from.at.OpenDir(l.Name)
		if err != nil {
			return kept("cannot open the lock directory: %v", err)
		}
		defer in.Close()
		if st, err := in.Stat(); err != nil || !l.Info.Same(st) {
			return skipped("the lock was replaced since it was judged; run lockctl doctor again")
		}
		dst = place{in, filepath.Base(to)}
	} else if filepath.Dir(to) != l.Dir {
		return kept("cannot tell where the claimed record belongs")
	}
	// The claim must still be the file judged, or it is not ours to move.
	data, st, _, err := from.at.ReadFile(from.name, scan.MaxRecord)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return skipped("another process resolved the claim first")
	case err != nil:
		return kept("cannot read the claim: %v", err)
	case !st.SameFile(c.Record.Info) || !bytes.Equal(data, c.Record.Raw):
		return skipped("the claim changed since it was judged; run lockctl doctor again")
	}
	f.hook(BeforeRemove, l)
	err = from.at.RenameNoReplace(from.name, dst.at, dst.name)
	switch {
	case err == nil:
		return Outcome{Action: Restored, Reason: fmt.Sprintf("the breaker was gone and pid %s, whose record it claimed, is alive: its record is back at %s", c.Record.Holder.PidText, dst.path())}
	case errors.Is(err, fs.ErrNotExist):
		return skipped("another process resolved the claim first")
	case errors.Is(err, fs.ErrExist):
		return Outcome{Action: Kept, Conflict: from.path(), Reason: fmt.Sprintf(
			"the claimed record's holder is alive, but something new stands at %s: the record is kept in %s; inspect both by hand", dst.path(), from.path())}
	}
	return kept("cannot put the record back: %v", err)
}

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
		return kept("owner-less, but not every process's open files could be seen, so a holder may be hiding (run as root with CAP_SYS_PTRACE)")
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
// kind age may remove: an empty lock file, one that says it was written
// without an owner ("0", FormatNoPid), or an empty lock directory. Bytes no
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
	case l.Format != scan.FormatEmpty && l.Format != scan.FormatNoPid:
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

// Debris removes the abandoned builds beside a lock (res.Debris: unpublished
// <lock>.new.<token>.<maker> directories whose maker is gone), and returns
// how many it removed. Each is first renamed, never replacing, to a build
// name of this process's own, so that of several sweepers one removes it,
// and a sweeper killed half-way leaves a build whose maker (itself) is gone,
// which the next sweep removes. A build is inert once its maker is gone:
// only the maker ever publishes it.
func (f *Fixer) Debris(res verdict.Result) int {
	l := res.Lock
	if len(res.Debris) == 0 {
		return 0
	}
	d, err := fsx.OpenDir(l.Dir)
	if err != nil {
		return 0
	}
	defer d.Close()
	removed := 0
	for _, s := range res.Debris {
		if s.Op == verdict.OpRemove && filepath.Dir(s.Path) == l.Dir {
			if f.spentReservation(d, l, filepath.Base(s.Path)) {
				removed++
			}
			continue
		}
		if s.Op != verdict.OpRmdir || filepath.Dir(s.Path) != l.Dir {
			continue
		}
		name := filepath.Base(s.Path)
		rest, ok := strings.CutPrefix(name, l.Name+".new.")
		rest, _ = scan.CutNSSuffix(rest)
		i := strings.LastIndexByte(rest, '.')
		if !ok || i < 0 {
			continue
		}
		token := rest[:i]
		mine := fmt.Sprintf("%s.new.%s.%d%s", l.Name, token, f.Pid, scan.NSSuffix(f.Judge.Host.PidNS))
		// Examined before it is touched: a build past scan's read limit
		// was judged by its name alone, and whatever is not lockctl's
		// build is never renamed.
		if _, inert := claimedBuild(d, name, token); !inert {
			continue
		}
		// 1. Claim.
		if err := d.RenameNoReplace(name, d, mine); err != nil {
			continue // another sweeper took it, or it is gone
		}
		// 2. Verify what was claimed, read afresh: still lockctl's build
		// (an empty directory, or one holding only a lockctl record of
		// this token), or it goes back, never replacing, and is left
		// alone. Its maker was judged gone; only the maker publishes.
		if _, inert := claimedBuild(d, mine, token); !inert {
			_ = d.RenameNoReplace(mine, d, name)
			continue
		}
		// 3. Remove: the record, then the directory, which fails if
		// anything was put inside meanwhile.
		if d.RemoveWith(mine, "holder") == nil {
			removed++
		}
	}
	return removed
}

// claimedBuild reads the build (or the claimed build) name in d and says, by verdict's
// rule (InertBuild), whether it is lockctl's build of token.
func claimedBuild(d fsx.Dir, name, token string) (string, bool) {
	rec, others := scan.ReadSideDir(d, name)
	if rec.Err == nil {
		rec.Holder, rec.Err = scan.ParseLockctl(rec.Raw)
	}
	return verdict.InertBuild(scan.Claim{Kind: scan.ClaimBuild, Token: token, Record: rec, Others: others})
}

// spentReservation removes name, a reservation's claim left by an adopter
// or releaser that is gone once the lock held another record (verdict's
// spentReservation): it claims it under its own pid, checks that it holds a
// reservation and that the lock still holds another record, and only then
// removes it; otherwise it puts it back.
func (f *Fixer) spentReservation(d fsx.Dir, l *scan.Lock, name string) bool {
	rest, ok := strings.CutPrefix(name, l.Name+".rel.")
	i := strings.LastIndexByte(rest, '.')
	if !ok || i < 0 {
		return false
	}
	mine := fmt.Sprintf("%s.rel.%s.%d", l.Name, rest[:i], f.Pid)
	if err := d.RenameNoReplace(name, d, mine); err != nil {
		return false // another sweeper took it, or it is gone
	}
	data, _, _, err := d.ReadFile(mine, scan.MaxRecord)
	h, perr := scan.ParseLockctl(data)
	in, cerr := d.OpenDir(l.Name)
	var cur []byte
	if cerr == nil {
		cur, _, _, cerr = in.ReadFile("holder", scan.MaxRecord)
		in.Close()
	}
	if err != nil || perr != nil || !h.Reserved || cerr != nil || !bytes.HasPrefix(cur, []byte(scan.LockctlMagic+"\n")) && !bytes.HasPrefix(cur, []byte(scan.ReserveMagic+"\n")) || bytes.Equal(cur, data) {
		_ = d.RenameNoReplace(mine, d, name)
		return false
	}
	return d.Remove(mine) == nil
}

// onlyBuilds reports whether l is no lock at all, only builds beside where
// it would be.
func onlyBuilds(l *scan.Lock) bool {
	if l.Kind != scan.KindMissing || len(l.Claims) == 0 {
		return false
	}
	for _, c := range l.Claims {
		if c.Kind != scan.ClaimBuild {
			return false
		}
	}
	return true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

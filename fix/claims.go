package fix

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

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

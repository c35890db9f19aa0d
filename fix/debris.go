package fix

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

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

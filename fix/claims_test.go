//go:build linux

package fix_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Two releases (or breaks) that both died leave an empty lock directory
// with two side files. When both makers and both claimed holders are gone,
// nothing is left to protect: --fix finishes them all. Before, "resolve them
// by hand" wedged the lock for good (docs/model.md, finding 2).
func TestSeveralAbandonedClaims(t *testing.T) {
	host := testHost(t)
	t.Run("all gone: finished", func(t *testing.T) {
		dir := tempDir(t)
		lock := mkGenA(t, dir, "x.lock", nil)
		p1, p2 := testutil.Gone(t), testutil.Gone(t)
		testutil.WriteFile(t, fmt.Sprintf("%s.holder.releasing.%d", lock, p1), testutil.RecA(p1, host.Name))
		testutil.WriteFile(t, fmt.Sprintf("%s.dead.%d.777", lock, testutil.Gone(t)), testutil.RecA(p2, host.Name))
		res := judge(t, dir, lock, verdict.Claimed)
		if len(res.Remove) != 3 {
			t.Fatalf("Judge(%s).Remove = %v, want the directory and both side files", lock, res.Remove)
		}

		o := fix.New(judges.Sweep(host)).Fix(res)

		wantOutcome(t, lock, o, fix.Removed, "finished 2 abandoned side files")
		if left := names(t, dir); len(left) > 0 {
			t.Errorf("the registry still holds %q, want nothing", left)
		}
	})
	t.Run("one maker alive: left alone", func(t *testing.T) {
		dir := tempDir(t)
		lock := mkGenA(t, dir, "x.lock", nil)
		p1, live := testutil.Gone(t), testutil.Sleeper(t).Process.Pid
		testutil.WriteFile(t, fmt.Sprintf("%s.holder.releasing.%d", lock, p1), testutil.RecA(p1, host.Name))
		testutil.WriteFile(t, fmt.Sprintf("%s.holder.releasing.%d", lock, live), testutil.RecA(live, host.Name))
		before := testutil.Snapshot(t, dir)
		res := judge(t, dir, lock, verdict.Claimed)
		if len(res.Remove) != 0 {
			t.Fatalf("Judge(%s).Remove = %v, want none while a releaser runs", lock, res.Remove)
		}

		o := fix.New(judges.Sweep(host)).Fix(res)

		wantOutcome(t, lock, o, fix.Skipped, "")
		testutil.SameTree(t, dir, before)
	})
}

// TestClaimsNameTheirNamespace: a claim lockctl makes ends with the pid
// namespace of the breaker (.ns<inode>), and scan reads it so, so that a
// reader in another namespace judges the breaker there rather than by its
// number (issue 13). Without it, a container's doctor finished or put back
// a host breaker's claim under way, the breaker's pid being absent there.
func TestClaimsNameTheirNamespace(t *testing.T) {
	host := testHost(t)
	suffix := scan.NSSuffix(host.PidNS)
	if suffix == "" {
		t.Skipf("this pid namespace (%q) has no inode number", host.PidNS)
	}
	for _, tc := range []struct {
		name string
		make maker
	}{{"filelock", makeFile}, {"registry-a", makeA}, {"registry-b", makeB}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tempDir(t)
			lock, _, _ := tc.make(t, host, dir, testutil.Gone(t))
			res := judge(t, dir, lock, verdict.Gone)
			f := fix.New(judges.Sweep(host))
			var seen []scan.Claim
			f.Hook = func(s fix.Step, l *scan.Lock) {
				if s != fix.BeforeVerify {
					return
				}
				for _, c := range claims(t, lock) {
					if !strings.HasSuffix(c, suffix) {
						t.Errorf("claim %s does not end with its breaker's namespace %s", c, suffix)
					}
				}
				cur, err := scan.ReadOne(l.Dir, l.Name)
				if err != nil || cur == nil {
					t.Fatalf("ReadOne(%s) = %v, %v", lock, cur, err)
				}
				seen = cur.Claims
			}
			wantOutcome(t, lock, f.Fix(res), fix.Removed, "was gone")
			if len(seen) != 1 || seen[0].Kind != scan.ClaimBreak || seen[0].By != int64(os.Getpid()) || seen[0].NS != host.PidNS {
				t.Errorf("mid-sweep, scan read the claims %+v, want one break by pid %d of %s", seen, os.Getpid(), host.PidNS)
			}
		})
	}
}

//go:build linux

package fix_test

import (
	"fmt"
	"testing"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/testutil"
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

		o := fix.New(host).Fix(res)

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

		o := fix.New(host).Fix(res)

		wantOutcome(t, lock, o, fix.Skipped, "")
		testutil.SameTree(t, dir, before)
	})
}

//go:build linux

package fix_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// TestLegacyThreadHeldIsNotSwept: an old empty lock file that a thread
// holds open in a descriptor table of its own (unshare(CLONE_FILES): the
// leader's /proc/<pid>/fd does not show it) is held. The first judgement
// names the process; a sweep whose first judgement came before the thread
// opened it is stopped by the second.
func TestLegacyThreadHeldIsNotSwept(t *testing.T) {
	t.Run("first-judgement", func(t *testing.T) {
		f := legacyFixer(t)
		reg := tempDir(t)
		p := filepath.Join(reg, zeroFileLock.name)
		zeroFileLock.make(t, p)
		pid, _ := testutil.StartPrivateFdThread(t, p)
		age(t, p)
		before := testutil.Snapshot(t, reg)
		res := judgeEv(t, reg, p, verdict.Live)
		if want := "held open by pid " + strconv.Itoa(pid) + " "; !strings.Contains(res.Reason, want) {
			t.Errorf("Judge(%s).Reason = %q, want it to contain %q", p, res.Reason, want)
		}
		wantOutcome(t, p, f.Fix(res), fix.Skipped, "this one is live")
		testutil.SameTree(t, reg, before)
	})
	t.Run("second-judgement", func(t *testing.T) {
		legacyFixer(t) // skips where the sweep cannot run
		reg := tempDir(t)
		p := filepath.Join(reg, zeroFileLock.name)
		zeroFileLock.make(t, p)
		age(t, p)
		res := judgeEv(t, reg, p, verdict.Ownerless)
		before := testutil.Snapshot(t, reg)
		var pid int
		o := sweptLegacy(t, reg, res, at(t, fix.BeforeClaim, func(*scan.Lock) { pid, _ = testutil.StartPrivateFdThread(t, p) }))
		wantOutcome(t, p, o, fix.Kept, "judged again, it is live")
		if !strings.Contains(o.Reason, "by pid "+strconv.Itoa(pid)) {
			t.Errorf("Fix(%s).Reason = %q, want it to name pid %d", p, o.Reason, pid)
		}
		testutil.SameTree(t, reg, before)
	})
}

// TestLegacyOpenedAfterAnEarlierSweep: the fixer's kernel evidence was
// already gathered (for an earlier lock of the same run) when a new process
// opens the next lock, after its claim: the second judgement looks at the
// open files afresh, so it is seen, and the lock goes back.
func TestLegacyOpenedAfterAnEarlierSweep(t *testing.T) {
	reg, second, r2, f := secondAfterAnEarlierSweep(t)
	before := testutil.Snapshot(t, reg)
	var pid int
	f.Hook = at(t, fix.BeforeJudge, func(*scan.Lock) { pid = testutil.StartHolder(t, "open", claimOf(t, second)).Pid })
	o := f.Fix(r2)
	wantOutcome(t, second, o, fix.Kept, "judged again, it is live")
	if !strings.Contains(o.Reason, "by pid "+strconv.Itoa(pid)) {
		t.Errorf("Fix(%s).Reason = %q, want it to name pid %d", second, o.Reason, pid)
	}
	testutil.SameTree(t, reg, before)
}

//go:build linux

package fix_test

import (
	"testing"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// TestRejudgeSeesAFlockTakenAfterAnEarlierSweep guards the invariant of
// the one wiring (judges.Sweep): the judgement again after a claim asks
// the kernel afresh. The fixer, as doctor --fix makes it, has already
// swept one gone lock (so any evidence it kept is from then) when a
// process flocks the next one, after its claim: judged again, the flock
// is seen, and the lock goes back untouched. A fixer whose judge cached
// its look at the kernel would remove a held lock here.
func TestRejudgeSeesAFlockTakenAfterAnEarlierSweep(t *testing.T) {
	host := testHost(t)
	dir := tempDir(t)
	first := mkFile(t, dir, "a.lock", fileRec(testutil.Gone(t)))
	second := mkFile(t, dir, "b.lock", fileRec(testutil.Gone(t)))
	r1 := judge(t, dir, first, verdict.Gone)
	r2 := judge(t, dir, second, verdict.Gone)

	f := fix.New(judges.Sweep(host))
	wantOutcome(t, first, f.Fix(r1), fix.Removed, "judged it again and removed")
	before := testutil.Snapshot(t, dir)
	f.Hook = at(t, fix.BeforeJudge, func(*scan.Lock) { testutil.StartHolder(t, "flock", claimOf(t, second)) })
	wantOutcome(t, second, f.Fix(r2), fix.Kept, "judged again, the holder is live")
	testutil.SameTree(t, dir, before)
}

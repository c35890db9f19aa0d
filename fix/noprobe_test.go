//go:build linux

package fix_test

import (
	"os"
	"testing"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/verdict"
)

// TestSweepWithoutProbe guards the fail-closed platforms (issue 9): a lock
// whose holder is gone, judged gone here on Linux, is never swept by a
// Fixer whose probe is NoProbe (the KernelProbe of every platform without
// one): judging again, just before removing, reads unknown, and not a file
// changes.
func TestSweepWithoutProbe(t *testing.T) {
	host := testHost(t)
	for _, tt := range []struct {
		name string
		make maker
	}{
		{"registry-a", makeA},
		{"registry-b", makeB},
		{"pid", makePid},
		{"uucp", makeUUCP},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempDir(t)
			lock, _, _ := tt.make(t, host, dir, testutil.Gone(t))
			res := judge(t, dir, lock, verdict.Gone)
			before := testutil.Snapshot(t, dir)

			f := &fix.Fixer{Judge: &verdict.Judge{Host: host, Probe: verdict.NoProbe{}, Evidence: verdict.NoEvidence{}}, Pid: os.Getpid()}
			o := f.Fix(res)

			if o.Action == fix.Removed {
				t.Errorf("Fix(%s) = %s (%s) without a probe, want nothing removed", lock, o.Action, o.Reason)
			}
			testutil.SameTree(t, dir, before)
		})
	}
}

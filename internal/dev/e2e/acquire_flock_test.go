//go:build linux

package e2e

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// TestAcquireKeepsFlockedLock: a lockctl lock whose recorded holder is
// gone, but on which a running process holds a flock, is in use: acquire
// waits, times out (75), and leaves it as it was.
func TestAcquireKeepsFlockedLock(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock (util-linux) is not installed")
	}
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	s := r.sleeper()
	r.mustLockctl(0, "acquire", "--holder-pid", strconv.Itoa(s.pid), l)
	s.kill()
	r.waitGone(s.pid)
	f := r.start(nil, flock, "--nonblock", l, "sleep", "600")
	t.Cleanup(f.kill)
	testutil.WaitFor(t, 10e9, "flock to take the lock", func() bool {
		return r.doctor(dir)["x.lock"].Verdict == "live" || f.done()
	})
	if f.done() {
		t.Fatalf("flock could not lock %s: %s", l, f.errText())
	}
	before := testutil.Snapshot(t, dir)
	if res := r.lockctl(nil, "acquire", "--timeout", "300ms", l); res.code != cli.ExitTimeout {
		t.Errorf("acquire over a flocked lock whose holder is gone: exit %d, want %d\n%s", res.code, cli.ExitTimeout, res.stderr)
	}
	testutil.SameTree(t, dir, before)
}

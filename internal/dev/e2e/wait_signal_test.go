//go:build linux

package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// TestWaitEndedBySignal: a signal during acquire's, reserve's or run's wait ends
// it with 128+N, saying what happened ("interrupted by SIGTERM"), never
// "timed out", and leaves nothing beside the lock: SIGHUP used to kill it
// outright and leave its build (issue 31, item 9).
func TestWaitEndedBySignal(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	s := r.sleeper()
	r.mustLockctl(cli.ExitOK, "acquire", "--holder-pid", strconv.Itoa(s.pid), l)
	before := testutil.Snapshot(t, dir)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT} {
		for _, cmd := range [][]string{{"acquire", l}, {"reserve", "--grace", "30s", l}, {"run", l, "--", "true"}} {
			p := r.start(nil, append([]string{lcBinary(t)}, cmd...)...)
			if !p.awaitStderr("waiting for", 30*time.Second) {
				t.Fatalf("%s did not say it waits: %s", cmd[0], p.errText())
			}
			_ = syscall.Kill(p.pid, sig)
			code := p.wait(30 * time.Second)
			name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT"}[sig]
			if code != 128+int(sig) || !strings.Contains(p.errText(), "interrupted by "+name) || strings.Contains(p.errText(), "timed out") {
				t.Errorf("%s sent %s during its wait: exit %d, want %d saying so\n%s", cmd[0], name, code, 128+int(sig), p.errText())
			}
			testutil.SameTree(t, dir, before)
		}
	}
}

// TestSlotsWaitSaysItOnce: a wait on a counting lock whose slots are all
// held says who holds them once, and again only when that set changes, not
// at every slot it tries (it printed about 39 lines a second, alternating
// between the holders: issue 31, item 2).
func TestSlotsWaitSaysItOnce(t *testing.T) {
	r := lcNewReaper(t)
	l := filepath.Join(t.TempDir(), "x.lock")
	for range 2 {
		s := r.sleeper()
		r.mustLockctl(cli.ExitOK, "acquire", "--slots", "2", "--holder-pid", strconv.Itoa(s.pid), l)
	}
	res := r.lockctl(nil, "acquire", "--slots", "2", "--timeout", "3s", l)
	if res.code != cli.ExitTimeout {
		t.Fatalf("acquire of a counting lock whose slots are held: exit %d, want %d\n%s", res.code, cli.ExitTimeout, res.stderr)
	}
	if n := strings.Count(res.stderr, "lockctl: waiting for "); n < 1 || n > 2 {
		t.Errorf("a 3 s wait on 2 held slots said who holds them %d times, want once (twice while the set fills)\n%s", n, res.stderr)
	}
}

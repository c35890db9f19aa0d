//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// A lockctl lock lives while any process holds its kernel lock (issue 41,
// items 1 and 4): run's release leaves the lock to a child of CMD that kept
// fd 3, and to a flock(1) waiting on the path, as flock(1) itself would,
// and the next acquire gets in only once they are gone.

// TestRunLeavesLockToChildHoldingFd3: CMD exits, leaving a child that
// holds fd 3. flock -n fails and acquire times out while the child lives;
// once it is gone, acquire gets in (not over-corrected).
func TestRunLeavesLockToChildHoldingFd3(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock (util-linux) is not installed")
	}
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	res := r.mustLockctl(cli.ExitOK, "run", l, "--", "/bin/sh", "-c", "sleep 60 </dev/null >/dev/null 2>&1 & echo $! >"+pidFile+"; exit 0")
	if !strings.Contains(res.stderr, "left "+l+" in place") {
		t.Errorf("run's stderr does not say it left the lock to the child:\n%s", res.stderr)
	}
	runErr := res.stderr
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	if !lcExists(l) {
		t.Fatalf("run removed %s while CMD's child %d still holds fd 3", l, child)
	}
	if got := r.doctor(dir)["x.lock"].Verdict; got != "live" {
		t.Errorf("doctor reads the lock %s while CMD's child holds fd 3, want live", got)
	}
	if p := r.start(nil, flock, "--nonblock", l, "true"); p.wait(30*time.Second) == 0 {
		t.Errorf("flock -n %s got in while CMD's child holds fd 3", l)
	}
	// The wait never calls CMD, which is gone, still running (issue 41,
	// item 7).
	if res := r.lockctl(nil, "acquire", "--timeout", "300ms", l); res.code != cli.ExitTimeout || strings.Contains(res.stderr, "still running") || !strings.Contains(res.stderr, "is not running") {
		t.Errorf("acquire while CMD's child holds fd 3: exit %d, want %d, saying CMD is not running\n%s", res.code, cli.ExitTimeout, res.stderr)
	}
	if !strings.Contains(runErr, "pid "+strconv.Itoa(child)+" (sleep) still holds its kernel lock") {
		t.Errorf("run's note does not name the child %d holding the lock:\n%s", child, runErr)
	}
	syscall.Kill(child, syscall.SIGKILL)
	r.waitGone(child)
	s := r.sleeper()
	t.Cleanup(s.kill)
	r.mustLockctl(cli.ExitOK, "acquire", "--timeout", "10s", "--holder-pid", strconv.Itoa(s.pid), l)
	r.mustLockctl(cli.ExitOK, "release", "--holder-pid", strconv.Itoa(s.pid), l)
}

// TestFlockWaiterOnRunLockIsNeverGrantedARemovedLock: a flock(1) blocked on
// a run directory lock is granted the lock when run releases it, and the
// lock is left in place for it: acquire cannot get in beside it, and gets
// in once it ends.
func TestFlockWaiterOnRunLockIsNeverGrantedARemovedLock(t *testing.T) {
	flockWaiterOnRunLock(t, false)
}

// TestStoppedFlockWaiterOnRunLock: the same with the waiter stopped
// (SIGSTOP) while run releases: it is then in no list of the kernel's lock
// table (its flock call is restarted on SIGCONT), as one is between its
// open and its flock, but it has the lock directory open, and that keeps
// the lock in place for it.
func TestStoppedFlockWaiterOnRunLock(t *testing.T) {
	flockWaiterOnRunLock(t, true)
}

func flockWaiterOnRunLock(t *testing.T, stop bool) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock (util-linux) is not installed")
	}
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	gates := t.TempDir()
	gate1, gate2, in := filepath.Join(gates, "go1"), filepath.Join(gates, "go2"), filepath.Join(gates, "in")
	// Bounded (60 s), so that a test binary killed mid-way leaves no
	// loop running: the shells are CMD's and flock(1)'s children, not
	// tied to this process.
	wait := func(f string) string {
		return "i=0; while [ ! -e " + f + " ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done"
	}
	run := r.start(nil, lcBinary(t), "run", l, "--", "/bin/sh", "-c", wait(gate1))
	testutil.WaitFor(t, 30*time.Second, "run to hold "+l, func() bool { return lcExists(filepath.Join(l, "holder")) })
	st, err := os.Stat(l)
	if err != nil {
		t.Fatal(err)
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	fl := r.start(nil, flock, l, "/bin/sh", "-c", "touch "+in+"; "+wait(gate2))
	t.Cleanup(fl.kill)
	testutil.WaitFor(t, 30*time.Second, "flock(1) to wait on "+l+" in /proc/locks", func() bool { return waitingOn(ino) })
	if stop {
		syscall.Kill(fl.pid, syscall.SIGSTOP)
		testutil.WaitFor(t, 30*time.Second, "the stopped flock(1) to leave /proc/locks", func() bool { return !waitingOn(ino) })
	}
	if err := os.WriteFile(gate1, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run.wait(30 * time.Second); code != cli.ExitOK {
		t.Fatalf("run: exit %d\n%s", code, run.errText())
	}
	if stop {
		syscall.Kill(fl.pid, syscall.SIGCONT)
	}
	testutil.WaitFor(t, 30*time.Second, "flock(1) to be granted the lock", func() bool { return lcExists(in) || fl.done() })
	if fl.done() {
		t.Fatalf("flock(1) ended without getting in: %s", fl.errText())
	}
	if st2, err := os.Stat(l); err != nil || st2.Sys().(*syscall.Stat_t).Ino != ino {
		t.Fatalf("flock(1) was granted a lock directory that run removed (%v)", err)
	}
	if res := r.lockctl(nil, "acquire", "--timeout", "300ms", l); res.code != cli.ExitTimeout {
		t.Errorf("acquire while flock(1) holds the lock: exit %d, want %d\n%s", res.code, cli.ExitTimeout, res.stderr)
	}
	if err := os.WriteFile(gate2, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := fl.wait(30 * time.Second); code != 0 {
		t.Fatalf("flock(1): exit %d", code)
	}
	s := r.sleeper()
	t.Cleanup(s.kill)
	r.mustLockctl(cli.ExitOK, "acquire", "--timeout", "10s", "--holder-pid", strconv.Itoa(s.pid), l)
}

// waitingOn reports whether /proc/locks shows a request blocked on inode
// ino.
func waitingOn(ino uint64) bool {
	b, _ := os.ReadFile("/proc/locks")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[1] == "->" && strings.HasSuffix(f[6], ":"+strconv.FormatUint(ino, 10)) {
			return true
		}
	}
	return false
}

// TestFlockWaiterIsAWaiter: a flock(1) blocked on a lock file has it open,
// but waits: doctor lists it under waiters, as lslocks shows it blocked,
// and never as a holder (issue 31, item 4).
func TestFlockWaiterIsAWaiter(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock (util-linux) is not installed")
	}
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	if err := os.WriteFile(l, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(l)
	if err != nil {
		t.Fatal(err)
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	holder := r.start(nil, flock, "--no-fork", l, "sleep", "600")
	t.Cleanup(holder.kill)
	testutil.WaitFor(t, 30*time.Second, "flock(1) to take "+l, func() bool { return r.doctor(dir)["x.lock"].Verdict == "live" })
	waiter := r.start(nil, flock, l, "true")
	t.Cleanup(waiter.kill)
	testutil.WaitFor(t, 30*time.Second, "the second flock(1) to wait in /proc/locks", func() bool { return waitingOn(ino) })
	got := r.doctor(dir)["x.lock"]
	if got.Verdict != "live" || got.Holder == nil || got.Holder.Pid != int64(holder.pid) {
		t.Fatalf("doctor on a flocked file: %s (%s), want live, held by pid %d", got.Verdict, got.Reason, holder.pid)
	}
	waits := false
	for _, w := range got.Waiters {
		waits = waits || w.Pid == waiter.pid
	}
	if !waits {
		t.Errorf("doctor's waiters are %+v, want pid %d (flock), which waits", got.Waiters, waiter.pid)
	}
	if strings.Contains(got.Reason+strings.Join(got.Notes, "\n"), "pid "+strconv.Itoa(waiter.pid)+" ") {
		t.Errorf("doctor names the waiter pid %d as a holder: %s %q", waiter.pid, got.Reason, got.Notes)
	}
}

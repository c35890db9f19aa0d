//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"golang.org/x/sys/unix"
)

// lockfPy takes a whole-file POSIX lock the way dpkg and apt do
// (fcntl(F_SETLK), which Python's fcntl.lockf is): with "hold" it waits for
// it, writes READY and holds it until killed; with "try" it exits 0 if it
// got it at once and 1 if another holds it.
const lockfPy = `import fcntl, os, sys, time
f = open(sys.argv[2], "a+")
if sys.argv[1] == "try":
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit(1)
    sys.exit(0)
fcntl.lockf(f, fcntl.LOCK_EX)
open(sys.argv[3], "w").close()
time.sleep(600)
`

// kernelTools finds flock(1) and python3, or skips.
func kernelTools(t *testing.T) (flock, python, script string) {
	t.Helper()
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock (util-linux) is not installed")
	}
	if python, err = exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	script = filepath.Join(t.TempDir(), "lockf.py")
	if err := os.WriteFile(script, []byte(lockfPy), 0o644); err != nil {
		t.Fatal(err)
	}
	return flock, python, script
}

// TestKernelLockExclusion: on a kernel-lock path, flock(1), a POSIX lockf
// holder (dpkg's kind of lock) and lockctl run --kind flock exclude each
// other in every order; once the holder is SIGKILLed, each gets in at once;
// and a wait on the holder names it and never advises rm.
func TestKernelLockExclusion(t *testing.T) {
	flock, python, script := kernelTools(t)
	r := lcNewReaper(t)
	lc := lcBinary(t)
	sh := "/bin/sh"
	holders := map[string]func(l, ready string) []string{
		"flock(1)": func(l, ready string) []string {
			// The shell's way: the shell, exec'd into sleep, holds it.
			return []string{sh, "-c", `exec 9>>"$1" && ` + flock + ` -x 9 && : >"$2" && exec sleep 600`, "sh", l, ready}
		},
		"lockf": func(l, ready string) []string { return []string{python, script, "hold", l, ready} },
		"lockctl": func(l, ready string) []string {
			return []string{lc, "run", "--kind", "flock", l, "--", sh, "-c", `: >"$1" && exec sleep 600`, "sh", ready}
		},
	}
	// Each contender exits 0 when it got the lock at once, and not 0 when
	// it is held.
	contenders := map[string]func(l string) []string{
		"flock(1)": func(l string) []string { return []string{flock, "-n", l, "true"} },
		"lockf":    func(l string) []string { return []string{python, script, "try", l} },
		"lockctl": func(l string) []string {
			return []string{lc, "run", "--kind", "flock", "--timeout", "200ms", l, "--", "true"}
		},
		// Not told the kind: an empty file is judged, and a holder the
		// kernel shows keeps it held.
		"lockctl-auto": func(l string) []string { return []string{lc, "run", "--timeout", "200ms", l, "--", "true"} },
	}
	for hn, holder := range holders {
		for cn, contender := range contenders {
			if cn == "lockctl-auto" && hn == "lockctl" {
				continue // a file lockctl made: auto is flock, as above
			}
			if hn != "lockctl" && !strings.HasPrefix(cn, "lockctl") {
				continue // flock and POSIX locks are independent on Linux: not lockctl's to promise
			}
			t.Run(hn+" then "+cn, func(t *testing.T) {
				dir := t.TempDir()
				l, ready := filepath.Join(dir, "k.lock"), filepath.Join(dir, "ready")
				if hn != "lockctl" {
					if err := os.WriteFile(l, nil, 0o644); err != nil { // what flock(1) leaves behind
						t.Fatal(err)
					}
				}
				h := r.start(nil, holder(l, ready)...)
				testutil.WaitFor(t, 10*time.Second, hn+" to hold "+l, func() bool { return lcExists(ready) || h.done() })
				if h.done() {
					t.Fatalf("%s could not take the lock: %s", hn, h.errText())
				}
				c := r.start(nil, contender(l)...)
				if code := c.wait(30 * time.Second); code == 0 {
					t.Fatalf("%s got %s while %s held it: two holders", cn, l, hn)
				}
				if cn == "lockctl-auto" {
					if code, e := c.code(), c.errText(); code != cli.ExitTimeout || strings.Contains(e, "rm ") {
						t.Errorf("lockctl run (kind not given) on an empty file %s holds: exit %d, want %d and no rm\n%s", hn, code, cli.ExitTimeout, e)
					}
				}
				if cn == "lockctl" {
					if code := c.code(); code != cli.ExitTimeout {
						t.Errorf("lockctl run on a held kernel lock: exit %d, want %d\n%s", code, cli.ExitTimeout, c.errText())
					}
					holderPid := h.pid // for lockctl run: itself, the lock's taker
					if e := c.errText(); !strings.Contains(e, "held by pid "+strconv.Itoa(holderPid)) || strings.Contains(e, "rm ") {
						t.Errorf("lockctl run's wait on %s (pid %d) says:\n%s\nwant the holder named and no rm", hn, holderPid, e)
					}
				}
				killHolder(t, r, h, hn)
				c = r.start(nil, contender(l)...)
				if code := c.wait(30 * time.Second); cn == "lockctl-auto" && code != cli.ExitTimeout {
					t.Errorf("lockctl run (kind not given) on the empty file %s left: exit %d, want %d: a file of unknown kind is never taken by a kernel lock alone", hn, code, cli.ExitTimeout)
				} else if cn != "lockctl-auto" && code != 0 {
					t.Errorf("%s after %s was SIGKILLed: exit %d, want it to get the lock at once\n%s", cn, hn, code, c.errText())
				}
				if !lcExists(l) {
					t.Errorf("%s is gone: a kernel-lock file is never removed", l)
				}
			})
		}
	}
}

// killHolder SIGKILLs a holder and, for lockctl run, its CMD too, which
// holds the lock with it (fd 3).
func killHolder(t *testing.T, r *lcReaper, h *lcProc, name string) {
	t.Helper()
	kids := lcChildren(h.pid)
	h.kill()
	for _, k := range kids {
		r.killPid(k)
	}
}

// TestRunPassesTheLockToCMD: lockctl run hands CMD the lock's file (fd 3)
// with its kernel lock, for both kinds, so that a SIGKILL of lockctl leaves
// the lock held while CMD runs: neither flock(1) nor another lockctl run
// gets in, and doctor names CMD.
func TestRunPassesTheLockToCMD(t *testing.T) {
	flock, _, _ := kernelTools(t)
	r := lcNewReaper(t)
	lc := lcBinary(t)
	for _, kind := range []string{"dir", "flock"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			l, ready := filepath.Join(dir, "x.lock"), filepath.Join(dir, "ready")
			run := r.start(nil, lc, "run", "--kind", kind, l, "--", "/bin/sh", "-c", `: >"$1" && exec sleep 600`, "sh", ready)
			testutil.WaitFor(t, 10*time.Second, "CMD to start", func() bool { return lcExists(ready) || run.done() })
			if run.done() {
				t.Fatalf("lockctl run: %s", run.errText())
			}
			cmd := lcChildren(run.pid)
			if len(cmd) != 1 {
				t.Fatalf("lockctl run has children %v, want CMD alone", cmd)
			}
			if fd3, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", cmd[0])); err != nil || fd3 != l {
				t.Errorf("CMD's fd 3 is %q (%v), want the lock %s", fd3, err, l)
			}
			if code := r.start(nil, flock, "-n", l, "true").wait(30 * time.Second); code == 0 {
				t.Fatalf("flock -n got %s while lockctl run held it", l)
			}
			run.kill()
			if code := r.start(nil, flock, "-n", l, "true").wait(30 * time.Second); code == 0 {
				t.Errorf("flock -n got %s after lockctl run was SIGKILLed, while CMD (pid %d) still runs", l, cmd[0])
			}
			c := r.lockctl(nil, "run", "--kind", kind, "--timeout", "200ms", l, "--", "true")
			if c.code != cli.ExitTimeout || !strings.Contains(c.stderr, "pid "+strconv.Itoa(cmd[0])) {
				t.Errorf("lockctl run while CMD (pid %d) holds the lock: exit %d, want %d naming it\n%s", cmd[0], c.code, cli.ExitTimeout, c.stderr)
			}
			r.killPid(cmd[0])
			c = r.lockctl(nil, "run", "--kind", kind, "--timeout", "10s", l, "--", "true")
			if c.code != 0 {
				t.Errorf("lockctl run once CMD is gone too: exit %d, want 0\n%s", c.code, c.stderr)
			}
		})
	}
}

// killPid SIGKILLs pid, a running descendant this process did not start
// itself (CMD under lockctl run), through a pidfd, and waits until it has
// been reaped. A pid already reaped is left alone: its number may be
// another process's now.
func (r *lcReaper) killPid(pid int) {
	r.t.Helper()
	if r.wasReaped(pid) {
		return
	}
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		unix.Close(fd)
	}
	r.waitGone(pid)
}

// TestDoctorNamesWaiters: while lockctl run holds a kernel lock and flock(1)
// waits for it, doctor says live, names lockctl as the holder and flock(1)
// as waiting on it, lslocks-style; once both are gone it is free.
func TestDoctorNamesWaiters(t *testing.T) {
	flock, _, _ := kernelTools(t)
	r := lcNewReaper(t)
	dir := t.TempDir()
	l, ready := filepath.Join(dir, "k.lock"), filepath.Join(t.TempDir(), "ready")
	run := r.start(nil, lcBinary(t), "run", "--kind", "flock", l, "--", "/bin/sh", "-c", `: >"$1" && exec sleep 600`, "sh", ready)
	testutil.WaitFor(t, 10*time.Second, "CMD to start", func() bool { return lcExists(ready) || run.done() })
	if run.done() {
		t.Fatalf("lockctl run: %s", run.errText())
	}
	w := r.start(nil, flock, l, "true")
	var got lcLock
	// The waiter blocks in the kernel at a moment this process cannot see:
	// look until doctor shows it, which it must within the deadline.
	testutil.WaitFor(t, 10*time.Second, "doctor to show flock(1) waiting", func() bool {
		got = r.doctor(dir)["k.lock"]
		return len(got.Waiters) > 0 || w.done()
	})
	if w.done() {
		t.Fatalf("flock(1) got %s while lockctl run held it", l)
	}
	if got.Verdict != "live" || got.Holder == nil || got.Holder.Pid != int64(run.pid) {
		t.Errorf("doctor on a held kernel lock: %s, holder %+v (%s), want live, held by pid %d", got.Verdict, got.Holder, got.Reason, run.pid)
	}
	if wt := got.Waiters[0]; wt.Pid != w.pid || wt.Command != "flock" || wt.LockType != "FLOCK" {
		t.Errorf("doctor's waiter = %+v, want pid %d, flock, FLOCK", wt, w.pid)
	}
	for _, k := range lcChildren(run.pid) {
		r.killPid(k)
	}
	if code := run.wait(30 * time.Second); code != 128+9 {
		t.Logf("lockctl run exited %d", code)
	}
	if code := w.wait(30 * time.Second); code != 0 {
		t.Errorf("flock(1) waiting on the lock: exit %d once it was free, want 0", code)
	}
	if v := r.doctor(dir)["k.lock"].Verdict; v != "free" {
		t.Errorf("doctor once nobody holds it: %s, want free", v)
	}
}

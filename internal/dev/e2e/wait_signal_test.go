//go:build linux

package e2e

import (
	"fmt"
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

// signalCounter is a CMD that appends a line to $1 for each SIGINT it
// gets, each handled on its own, and writes its process group to $2 once
// ready; it exits after 20 s or at the first SIGTERM.
const signalCounter = `import os, signal, sys, time
def h(s, f):
    with open(sys.argv[1], "a") as o: o.write("INT\n")
signal.signal(signal.SIGINT, h)
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
with open(sys.argv[2] + ".new", "w") as o: o.write(str(os.getpgrp()))
os.rename(sys.argv[2] + ".new", sys.argv[2])
end = time.time() + 20
while time.time() < end: time.sleep(0.01)
`

// TestGroupSignalReachesCMDOnce: run started outside a terminal (setsid,
// as cron, systemd and CI start it) gets a SIGINT sent to its whole
// process group. CMD gets it once, passed on by lockctl: it used to get it
// twice, from the group and again from lockctl (issue 31, item 7). A
// SIGKILL of the group still ends CMD with lockctl.
func TestGroupSignalReachesCMDOnce(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("setsid (util-linux) is not installed")
	}
	python := lcPython(t)
	r := lcNewReaper(t)
	dir, files := t.TempDir(), t.TempDir()
	script := filepath.Join(files, "count.py")
	testutil.WriteFile(t, script, []byte(signalCounter))
	for i := 0; i < 3; i++ {
		got, ready := filepath.Join(files, fmt.Sprint("got", i)), filepath.Join(files, fmt.Sprint("ready", i))
		p := r.start(nil, setsid, lcBinary(t), "run", filepath.Join(dir, "g.lock"), "--", python, script, got, ready)
		testutil.WaitFor(t, 30*time.Second, "CMD to be ready", func() bool { return lcExists(ready) || p.done() })
		if p.done() {
			t.Fatalf("run ended early: %s", p.errText())
		}
		if pg := strings.TrimSpace(lcRead(t, ready)); pg == strconv.Itoa(p.pid) {
			t.Errorf("CMD is in run's process group %s outside a terminal: a group signal reaches it twice", pg)
		}
		_ = syscall.Kill(-p.pid, syscall.SIGINT)
		testutil.WaitFor(t, 30*time.Second, "CMD to get SIGINT", func() bool { return lcExists(got) })
		// run passes on a signal as it gets it: once CMD ends on the
		// SIGTERM sent after it, any second SIGINT has been handled.
		_ = syscall.Kill(-p.pid, syscall.SIGTERM)
		p.wait(30 * time.Second)
		if n := strings.Count(lcRead(t, got), "INT"); n != 1 {
			t.Errorf("try %d: CMD got SIGINT %d times from one signal to run's process group, want once", i, n)
		}
	}
	// A SIGKILL of the group, which lockctl cannot pass on, stops
	// lockctl alone: CMD runs on, holding the lock, as when lockctl alone
	// is killed.
	got, ready := filepath.Join(files, "got-kill"), filepath.Join(files, "ready-kill")
	p := r.start(nil, setsid, lcBinary(t), "run", filepath.Join(dir, "g.lock"), "--", python, script, got, ready)
	testutil.WaitFor(t, 30*time.Second, "CMD to be ready", func() bool { return lcExists(ready) || p.done() })
	kids := lcChildren(p.pid)
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	p.wait(30 * time.Second)
	for _, k := range kids {
		if !lcAlive(k) {
			t.Errorf("CMD %d died with lockctl's group", k)
		}
		if got := r.judgeOne(filepath.Join(dir, "g.lock")); got.Verdict != "live" {
			t.Errorf("with lockctl SIGKILLed and CMD running, the lock reads %s (%s), want live", got.Verdict, got.Reason)
		}
		r.killPid(k)
	}
}

// lcAlive says pid is a process that has not exited (a zombie has).
func lcAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z' && b[i+2] != 'X'
}

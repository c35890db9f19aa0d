//go:build linux

package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// Every mount a test makes is made in a mount namespace of its own, with
// private propagation, held by a process that dies with the test binary
// however the binary ends (its -test.timeout panic, a t.Fatal past which
// no cleanup runs, a SIGKILL of its process group): then the kernel takes
// the namespace and its mounts with it, and nothing a test mounts ever
// reaches the host's mount table (issue 40).
//
//   - A test that calls lockctl's Go code on the mounts (scan.ReadOne,
//     fsx, the judge) runs whole in such a namespace: inMountNS re-executes
//     the test binary for that one test under `unshare -m`, tied to this
//     process (testutil.StartTied), and relays its result. It stays in the
//     host's pid namespace, so what the judge sees of processes is what it
//     sees from the host.
//   - A test that runs the lockctl binary against mounts gets a namespace
//     held by a shell (mountNS), and enters it with `nsenter -t PID -m`.
//   - What forks a subtree or daemonizes in there (a shell, a FUSE daemon)
//     runs in a pid namespace of its own with `unshare --pid --fork
//     --kill-child`: a FUSE daemon left alive would keep the namespace, and
//     its mounts, alive; the death of the namespace's init takes it along.

// inMountNSEnv names, in a test binary that inMountNS re-executed, the
// test it runs in a mount namespace of its own.
const inMountNSEnv = "LOCKCTL_E2E_IN_MOUNTNS"

// inMountNS runs the calling test in a private mount namespace of its own.
// Called first thing in a top-level test, in the test binary as started, it
// runs the test again in a re-execution of the binary under `unshare -m
// --propagation private` (which dies with this process), relays its
// result (pass, skip with its reason, or failure with its output), and
// returns false: the caller returns at once. In the re-executed binary it
// returns true, and the test goes on, free to mount.
func inMountNS(t *testing.T) bool {
	t.Helper()
	if os.Getenv(inMountNSEnv) == t.Name() {
		return true
	}
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("inMountNS is for top-level tests, not %s", t.Name())
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux): no mount namespace to mount in")
	}
	args := []string{"-m", "--propagation", "private", os.Args[0],
		"-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1", "-test.v"}
	if f := flag.Lookup("test.gocoverdir"); f != nil && f.Value.String() != "" {
		args = append(args, "-test.gocoverdir="+f.Value.String()) // its coverage counts too
	}
	wait := 10 * time.Minute
	if d, ok := t.Deadline(); ok {
		// The child ends first, by its own timeout, so that its panic
		// (which names where it hung) is what this test reports.
		wait = time.Until(d) * 9 / 10
		args = append(args, "-test.timeout="+wait.String())
	}
	cmd := exec.Command(unshare, args...)
	cmd.Env = testutil.SetEnv(os.Environ(), inMountNSEnv, t.Name())
	cmd.Env = testutil.SetEnv(cmd.Env, "TMPDIR", t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = testutil.KillWait
	if err := testutil.StartTied(cmd); err != nil {
		t.Fatalf("cannot start %q: %v", cmd.Args, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	if _, ok := testutil.Within(waited, wait+testutil.KillWait); !ok {
		_ = cmd.Process.Kill()
		t.Fatalf("%s in its own mount namespace (pid %d) did not end within %s:\n%s", t.Name(), cmd.Process.Pid, wait+testutil.KillWait, out.String())
	}
	text := out.String()
	if err == nil && cmd.ProcessState.Success() {
		if _, reason, ok := strings.Cut(text, "--- SKIP: "+t.Name()+" "); ok {
			t.Skipf("in its own mount namespace: %s", reason)
		}
		if strings.Contains(text, "--- PASS: "+t.Name()+" ") {
			t.Logf("in its own mount namespace:\n%s", text)
			return false
		}
	}
	t.Fatalf("%s in its own mount namespace: %v\n%s", t.Name(), cmd.ProcessState, text)
	return false
}

// mustBeInMountNS fails a test that would mount in the host's namespace:
// every helper that mounts calls it.
func mustBeInMountNS(t *testing.T) {
	t.Helper()
	if os.Getenv(inMountNSEnv) == "" {
		t.Fatalf("%s mounts outside a mount namespace of its own: begin it with `if !inMountNS(t) { return }`", t.Name())
	}
}

// tiedInPidNS starts args (a program that forks, or daemonizes) as the
// init of a pid namespace of its own (unshare --pid --fork --kill-child),
// tied to this process: when this process dies, unshare does, and with it
// the namespace's init and every process in it. Cleanup does the same, and
// waits for unshare at most KillWait. It returns unshare's command.
func tiedInPidNS(t *testing.T, out *bytes.Buffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("unshare", append([]string{"--pid", "--fork", "--kill-child"}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = testutil.KillWait
	if err := testutil.StartTied(cmd); err != nil {
		t.Fatalf("cannot start %q: %v", cmd.Args, err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		testutil.Await(t, testutil.KillWait, fmt.Sprintf("%q (pid %d) to be reaped after its SIGKILL", cmd.Args, cmd.Process.Pid), waited)
	})
	return cmd
}

// mountNS starts a shell in a mount namespace of its own, whose mounts are
// private (so that nothing it mounts reaches the host's mount table), runs
// script there, and keeps the namespace until the test ends. The shell is
// the init of a pid namespace of its own, under unshare tied to this
// process, so the namespace ends with the test, or with this process
// however it dies. It returns the host pid of the shell: `nsenter -t PID
// -m` enters the mount namespace (the pid namespace stays the caller's).
// A process entered so keeps the namespace, and its mounts, alive: it must
// be one process, tied to this one (see flockIn).
func mountNS(t *testing.T, script string) int {
	t.Helper()
	c := exec.Command("unshare", "-m", "--propagation", "private", "--pid", "--fork", "--kill-child",
		"sh", "-c", "mount --make-rprivate / && "+script+" && echo ready && exec sleep 600")
	c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/"}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	c.Stderr = &stderr
	c.WaitDelay = testutil.KillWait
	if err := testutil.StartTied(c); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	stop := func() {
		_ = c.Process.Kill() // --kill-child: the namespace's init goes with it
		testutil.Await(t, testutil.KillWait, fmt.Sprintf("unshare (pid %d) of the mount namespace to be reaped after its SIGKILL", c.Process.Pid), waited)
	}
	if !waitLine(out, "ready", 60*time.Second) {
		go func() { _ = c.Wait(); close(waited) }()
		stop()
		t.Fatalf("the mount namespace's setup failed:\n%s", stderr.String())
	}
	go func() { _ = c.Wait(); close(waited) }()
	t.Cleanup(stop)
	var sh int
	testutil.WaitFor(t, 10*time.Second, "the mount namespace's shell", func() bool {
		if kids := lcChildren(c.Process.Pid); len(kids) == 1 {
			sh = kids[0]
		}
		return sh > 0
	})
	return sh
}

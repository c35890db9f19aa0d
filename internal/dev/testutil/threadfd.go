//go:build linux

package testutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// privateFdThread is a python3 program whose second thread gives itself a
// descriptor table of its own (unshare(CLONE_FILES)), opens argv[1] there,
// says "ready", and waits; the main thread, whose table (the one
// /proc/<pid>/fd shows) never has argv[1], waits for its stdin to close.
const privateFdThread = `import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
def run():
    if libc.unshare(0x400) != 0:  # CLONE_FILES
        print("unshare: errno", ctypes.get_errno(), flush=True)
        os._exit(2)
    os.open(sys.argv[1], os.O_RDONLY)
    print("ready", os.getpid(), threading.get_native_id(), flush=True)
    threading.Event().wait()
threading.Thread(target=run, daemon=True).start()
sys.stdin.read()
os._exit(0)
`

// StartPrivateFdThread starts a process one of whose threads holds path
// open in a descriptor table of its own: /proc/<pid>/fd, the leader's
// table, does not show path, /proc/<pid>/task/<tid>/fd does. It checks
// both before it returns the process's pid and the thread's id. At cleanup
// its stdin is closed, and it is killed if it has not exited 10s later, and
// reaped. It skips the test where python3 is missing.
func StartPrivateFdThread(t testing.TB, path string) (pid, tid int) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3: a thread with a descriptor table of its own is made with its ctypes")
	}
	cmd := exec.Command(py, "-c", privateFdThread, path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			Await(t, KillWait, fmt.Sprintf("the private-table thread holder of %s (pid %d) to be reaped after its SIGKILL", path, cmd.Process.Pid), done)
		}
	})
	var l string
	select {
	case l = <-line:
	case <-time.After(10 * time.Second):
		t.Fatalf("the private-table thread holder of %s did not say ready within 10s", path)
	}
	f := strings.Fields(l)
	if len(f) != 3 || f[0] != "ready" {
		t.Fatalf("the private-table thread holder of %s said %q", path, l)
	}
	pid, _ = strconv.Atoi(f[1])
	tid, _ = strconv.Atoi(f[2])
	if pid != cmd.Process.Pid || tid <= 0 || tid == pid {
		t.Fatalf("the private-table thread holder said %q; its pid is %d", l, cmd.Process.Pid)
	}
	// The fixture is what it claims: the leader's table lacks path, the
	// thread's has it.
	if fdsOpen(t, "/proc/"+strconv.Itoa(pid)+"/fd", path) {
		t.Fatalf("/proc/%d/fd shows %s: the thread's table is not its own", pid, path)
	}
	if !fdsOpen(t, "/proc/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid)+"/fd", path) {
		t.Fatalf("/proc/%d/task/%d/fd does not show %s", pid, tid, path)
	}
	return pid, tid
}

// fdsOpen reports whether some descriptor in the fd directory dir is the
// file path (by device and inode).
func fdsOpen(t testing.TB, dir, path string) bool {
	t.Helper()
	want, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if fi, err := os.Stat(dir + "/" + e.Name()); err == nil && os.SameFile(fi, want) {
			return true
		}
	}
	return false
}

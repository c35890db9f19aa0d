//go:build linux

package testutil

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A holder of a file lock is this test binary re-run in a role named in
// its environment, as Go's cmd/go/internal/lockedfile tests re-run theirs
// (TestSpuriousEDEADLK): only its TestHolderProcess runs, takes the lock,
// says so on stdout, and holds on until its stdin closes.
const (
	holderRoleEnv = "LOCKCTL_TEST_HOLDER_ROLE"
	holderPathEnv = "LOCKCTL_TEST_HOLDER_PATH"
	holderReady   = "lockctl-test-holder-ready"
)

// Holder is a process started by StartHolder.
type Holder struct {
	Pid  int
	done chan struct{} // closed once it has exited and been reaped
}

// StartHolder re-runs this test binary as a holder of path in role, with
// the files extra as its fd 3 on. Only the package's TestHolderProcess runs
// in it, which must be
//
//	func TestHolderProcess(t *testing.T) { testutil.HolderProcess(t) }
//
// StartHolder returns once the holder says it has taken its lock, and
// fails the test if the holder ends without saying so or has not said so
// within 10s. The roles:
//
//   - "flock": open path (a file or a directory) read-only and flock it;
//   - "posix", "ofd": open the file path read-write and take a whole-file
//     write lock with fcntl, F_SETLK or F_OFD_SETLK;
//   - "open": only open path;
//   - "hold-fd3": take nothing, and hold on to what came as fd 3;
//   - "flock-fd3-and-exit": flock fd 3 and exit at once, which leaves the
//     lock to every other process that has that open file.
//
// At cleanup its stdin is closed, which ends it, and it is waited for
// (killed if it has not exited 10s later).
func StartHolder(t T, role, path string, extra ...*os.File) *Holder {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("cannot find the test binary: %v", err)
	}
	cmd := exec.Command(exe, "-test.run=^TestHolderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), holderRoleEnv+"="+role, holderPathEnv+"="+path)
	cmd.ExtraFiles = extra
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("holder %s of %s: %v", role, path, err)
	}
	// An os.Pipe, not cmd.StdoutPipe: Wait, which runs in its own goroutine
	// below, would close a StdoutPipe under the reader.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("holder %s of %s: %v", role, path, err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		t.Fatalf("cannot start holder %s of %s: %v", role, path, err)
	}
	w.Close() // the holder's is the last write end: EOF comes when it exits
	h := &Holder{Pid: cmd.Process.Pid, done: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		said := false
		for sc.Scan() {
			if !said && sc.Text() == holderReady {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
	}()
	go func() { _ = cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			Await(t, KillWait, fmt.Sprintf("holder %s of %s (pid %d) to be reaped after its SIGKILL", role, path, h.Pid), h.done)
		}
	})
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("holder %s of %s (pid %d) ended without taking its lock", role, path, h.Pid)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("holder %s of %s (pid %d) did not take its lock within 10s", role, path, h.Pid)
	}
	return h
}

// Exited waits up to 10s for h to exit by itself, as a
// "flock-fd3-and-exit" holder does, and fails the test if it has not. Once
// Exited returns, h has been reaped: its pid names nothing.
func (h *Holder) Exited(t T) {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("holder %d did not exit within 10s", h.Pid)
	}
}

// HolderProcess is the body of TestHolderProcess, the test function that
// StartHolder runs. In a holder it never returns: it exits 0 once its stdin closes, or 3,
// with a message on stderr, if it cannot take its lock. In any other run of
// the test binary it skips the test.
func HolderProcess(t *testing.T) {
	role := os.Getenv(holderRoleEnv)
	if role == "" {
		t.Skip("not a test: the holder process that testutil.StartHolder starts")
	}
	os.Exit(hold(role, os.Getenv(holderPathEnv)))
}

func hold(role, path string) int {
	open := func(flags int) (int, error) { return unix.Open(path, flags|unix.O_CLOEXEC, 0) }
	wholeFile := &unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	var err error
	switch role {
	case "flock":
		var fd int
		if fd, err = open(unix.O_RDONLY); err == nil {
			err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		}
	case "posix", "ofd":
		cmd := unix.F_SETLK
		if role == "ofd" {
			cmd = unix.F_OFD_SETLK
		}
		var fd int
		if fd, err = open(unix.O_RDWR); err == nil {
			err = unix.FcntlFlock(uintptr(fd), cmd, wholeFile)
		}
	case "open":
		_, err = open(unix.O_RDONLY)
	case "hold-fd3":
	case "flock-fd3-and-exit":
		if err = unix.Flock(3, unix.LOCK_EX|unix.LOCK_NB); err == nil {
			fmt.Println(holderReady)
			return 0
		}
	default:
		err = fmt.Errorf("unknown role")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "holder %s %s: %v\n", role, path, err)
		return 3
	}
	fmt.Println(holderReady)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

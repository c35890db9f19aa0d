//go:build unix

package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestProgressErasedOnInterrupt: Ctrl-C (a real SIGINT) while the progress
// line is shown erases it before lockctl dies of the signal, so the
// operator's prompt does not land after a half line of progress.
func TestProgressErasedOnInterrupt(t *testing.T) {
	if os.Getenv("LOCKCTL_TEST_PROGRESS_CHILD") == "1" {
		progressAfter, progressEvery = 0, time.Millisecond
		isTerminal = func(any) bool { return true }
		var entries, found, judged atomic.Int64
		startProgress(os.Stderr, true, &entries, &found, &judged)
		time.Sleep(100 * time.Millisecond) // the line is drawn
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
		time.Sleep(10 * time.Second)
		os.Exit(0) // not reached: the signal ends it
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestProgressErasedOnInterrupt$")
	cmd.Env = append(os.Environ(), "LOCKCTL_TEST_PROGRESS_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the child: %v, want it to die of SIGINT\n%s", err, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("the child ended with %v, want death by SIGINT", ee)
	}
	if out := stderr.String(); !strings.Contains(out, "entries walked") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("stderr = %q, want the progress line erased last", out)
	}
}

package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestProcessOfChild asks Command, Program and Parent about a child this
// test started and knows all three of, and about a pid that has exited.
func TestProcessOfChild(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	cmd := exec.Command(sleep, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	exe, err := filepath.EvalSymlinks(sleep)
	if err != nil {
		t.Fatal(err)
	}
	// comm is set by exec: wait for the child to have run it.
	want := filepath.Base(exe)
	if len(want) > 15 {
		want = want[:15]
	}
	for i := 0; i < 500 && Command(pid) != want; i++ {
		time.Sleep(time.Millisecond)
	}
	if got := Command(pid); got != want {
		t.Errorf("Command(%d) = %q, want %q", pid, got, want)
	}
	if got := Program(pid); got != filepath.Base(exe) {
		t.Errorf("Program(%d) = %q, want %q", pid, got, filepath.Base(exe))
	}
	if got := Parent(pid); got != os.Getpid() {
		t.Errorf("Parent(%d) = %d, want this test's pid %d", pid, got, os.Getpid())
	}

	cmd.Process.Kill()
	cmd.Wait()
	if c, p, pp := Command(pid), Program(pid), Parent(pid); c != "" || p != "" || pp != 0 {
		t.Errorf("for exited pid %d: Command %q, Program %q, Parent %d; want \"\", \"\", 0", pid, c, p, pp)
	}
}

package cli

import (
	"os"
	"syscall"
	"testing"
)

// TestForwardSignal: run never passes on a Ctrl-C or Ctrl-\ that the
// terminal has already sent to CMD (lockctl in the foreground group), and
// passes on everything else.
func TestForwardSignal(t *testing.T) {
	for _, tc := range []struct {
		s    os.Signal
		fg   bool
		want bool
	}{
		{os.Interrupt, true, false},
		{syscall.SIGQUIT, true, false},
		{os.Interrupt, false, true},
		{syscall.SIGQUIT, false, true},
		{syscall.SIGTERM, true, true},
		{syscall.SIGHUP, true, true},
	} {
		if got := forwardSignal(tc.s, tc.fg); got != tc.want {
			t.Errorf("forwardSignal(%v, foreground %v) = %v, want %v", tc.s, tc.fg, got, tc.want)
		}
	}
}

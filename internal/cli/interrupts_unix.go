//go:build unix

package cli

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// interrupts are the signals that end a doctor run at a terminal.
var interrupts = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// signalNumber is s's number, for the exit status a shell gives a death by it.
func signalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 2
}

// signalName is s's name as a shell says it: SIGTERM.
func signalName(s os.Signal) string {
	if n, ok := s.(syscall.Signal); ok {
		if name := unix.SignalName(n); name != "" {
			return name
		}
	}
	return s.String()
}

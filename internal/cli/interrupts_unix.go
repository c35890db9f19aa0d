//go:build unix

package cli

import (
	"os"
	"syscall"
)

// interrupts are the signals that end a doctor run at a terminal.
var interrupts = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

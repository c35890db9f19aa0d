//go:build !unix

package cli

import "os"

// interrupts are the signals that end a doctor run at a terminal.
var interrupts = []os.Signal{os.Interrupt}

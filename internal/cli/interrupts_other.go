//go:build !unix

package cli

import "os"

// interrupts are the signals that end a doctor run at a terminal.
var interrupts = []os.Signal{os.Interrupt}

// signalNumber is 2, SIGINT's number, for the exit status.
func signalNumber(os.Signal) int { return 2 }

// signalName is SIGINT, the only signal this platform reports.
func signalName(os.Signal) string { return "SIGINT" }

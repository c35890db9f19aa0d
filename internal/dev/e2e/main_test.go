//go:build linux

// Package e2e holds lockctl's end-to-end Go tests: real processes, real
// signals and real namespaces against the lockctl binary, built once
// (lcBinary), and started and reaped through one child subreaper
// (lcReaper). The scripts (testdata/script) are run from the root
// package; these are the tests that need more than a script can say.
package e2e

import (
	"os"
	"testing"
)

// TestMain lets this test binary also be the seccomp launcher of the
// tests without renameat2 (noreplace_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(noRenameat2Env) != "" {
		execWithoutRenameat2(os.Args[1:])
	}
	os.Exit(m.Run())
}

//go:build linux

// Package e2e holds lockctl's end-to-end Go tests: real processes, real
// signals and real namespaces against the lockctl binary, which is this
// test binary itself, copied once as lockctl (lcBinary), and started and
// reaped through one child subreaper (lcReaper). The scripts (testdata/script) are run from the root
// package; these are the tests that need more than a script can say.
package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/internal/cli"
)

// TestMain lets this test binary also be lockctl, when it is started under
// that name (lcBinary's copy of it), with the crash tests' pause points
// honoured (cli.RunWithTestHooks), and the seccomp launcher of the tests
// without renameat2 (noreplace_test.go), which execs that copy.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "lockctl" {
		os.Exit(cli.RunWithTestHooks(os.Args, os.Stdout, os.Stderr))
	}
	if os.Getenv(noRenameat2Env) != "" {
		execWithoutRenameat2(os.Args[1:])
	}
	os.Exit(m.Run())
}

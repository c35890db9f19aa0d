// The crash tests' pause points: lockctl started through RunWithTestHooks
// (the end-to-end tests' own binary) stops at the protocol point
// LOCKCTL_TEST_PAUSE names.

package cli

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/scan"
)

// pauseEnv names a protocol point (lock.Point or "fix-" + fix.Step) at which
// the process stops and waits to be killed: how the crash tests SIGKILL a
// real process at every step. It is honoured only when the CLI was entered
// through RunWithTestHooks (testHooks), which nothing but a test binary
// calls; Run, what the lockctl command calls, ignores it, so that a stray
// value in an operator's environment can never stop lockctl. No variable
// of the environment can turn the hooks on.
const pauseEnv = "LOCKCTL_TEST_PAUSE"

// testHooks is set by RunWithTestHooks, and never by Run.
var testHooks atomic.Bool

// RunWithTestHooks is Run for the end-to-end tests' binary, which starts
// itself as lockctl (internal/dev/e2e): it also honours LOCKCTL_TEST_PAUSE
// (pauseEnv), so that the crash tests can stop lockctl at any protocol
// point and kill it there. Nothing else may call it.
func RunWithTestHooks(args []string, stdout, stderr io.Writer) int {
	testHooks.Store(true)
	return Run(args, stdout, stderr)
}

// pauseWanted is the protocol point to pause at, or "".
func pauseWanted() string {
	if !testHooks.Load() {
		return ""
	}
	return os.Getenv(pauseEnv)
}

func pauseAt(point string, stderr io.Writer) {
	if pauseWanted() == point {
		fmt.Fprintf(stderr, "lockctl: paused at %s\n", point)
		select {}
	}
}

func lockHook(stderr io.Writer) func(lock.Point) {
	if pauseWanted() == "" {
		return nil
	}
	return func(p lock.Point) { pauseAt(string(p), stderr) }
}

func fixHook(stderr io.Writer) func(fix.Step, *scan.Lock) {
	if pauseWanted() == "" {
		return nil
	}
	return func(s fix.Step, _ *scan.Lock) { pauseAt("fix-"+string(s), stderr) }
}

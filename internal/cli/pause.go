// The crash tests' pause points: a binary built with -tags
// lockctl_testhooks stops at the protocol point LOCKCTL_TEST_PAUSE names.

package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/scan"
)

// pauseEnv names a protocol point (lock.Point or "fix-" + fix.Step) at which
// the process stops and waits to be killed: how the crash tests SIGKILL a
// real process at every step. It is honoured only by a binary built with
// -tags lockctl_testhooks (testHooks); a release build ignores it, so that
// a stray value in an operator's environment can never stop lockctl.
const pauseEnv = "LOCKCTL_TEST_PAUSE"

// pauseWanted is the protocol point to pause at, or "".
func pauseWanted() string {
	if !testHooks {
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

// Command lockctl finds wedged locks, says who holds each one, and removes
// only those whose holder is provably gone. Its command line is package
// internal/cli; the work is done by scan, verdict, fix, report and lock.
package main

import (
	"os"

	"github.com/lockctl/lockctl/internal/cli"
)

// stopProfile ends a CPU profile begun at start; only a build with the
// tag lockctlprof (profile.go) sets it.
var stopProfile = func() {}

func main() {
	code := cli.Run(os.Args, os.Stdout, os.Stderr)
	stopProfile()
	os.Exit(code)
}

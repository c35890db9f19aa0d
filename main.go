// Command lockctl finds wedged locks, says who holds each one, and removes
// only those whose holder is provably gone. Its command line is package
// internal/cli; the work is done by scan, verdict, fix, report and lock.
package main

import (
	"os"

	"github.com/lockctl/lockctl/internal/cli"
)

func main() { os.Exit(cli.Run(os.Args, os.Stdout, os.Stderr)) }

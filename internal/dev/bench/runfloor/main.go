//go:build linux

// Command runfloor is the floor under `lockctl run L -- CMD` (issue 19): a
// program that is lockctl (runfloor lockctl ARGS... runs it, so the linker
// keeps all of it, and every start pays what a start of lockctl pays) and
// that, run as below, does none of a lock's work. With "gate" it starts CMD behind the gate run uses, opens
// the gate at once and waits for CMD; with "direct" it starts CMD without a
// gate. BenchmarkRun times both beside run and flock(1): run can be no
// faster than "gate", and no run that keeps lockctl's dependencies can be
// faster than "direct".
//
//	go build -o /tmp/runfloor ./internal/dev/bench/runfloor
//	/tmp/runfloor gate true
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/lockctl/lockctl/internal/cli"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "lockctl" {
		os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
	}
	if len(os.Args) < 3 || os.Args[1] != "gate" && os.Args[1] != "direct" {
		fmt.Fprintln(os.Stderr, "usage: runfloor gate|direct CMD [ARGS...], or runfloor lockctl ARGS...")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1] == "gate", os.Args[2:]))
}

func run(gated bool, cmdArgs []string) int {
	c := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	var open *os.File
	if gated {
		var err error
		if c, err = cli.GateCommand(cmdArgs); err != nil {
			fmt.Fprintln(os.Stderr, "runfloor:", err)
			return 1
		}
		r, w, err := os.Pipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, "runfloor:", err)
			return 1
		}
		defer r.Close()
		// fd 3 is the lock directory in run (none here), fd 4 the gate.
		c.ExtraFiles, open = []*os.File{nil, r}, w
	}
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "runfloor:", err)
		return 1
	}
	if open != nil {
		open.WriteString("go\n")
		open.Close()
	}
	var ee *exec.ExitError
	if err := c.Wait(); errors.As(err, &ee) {
		return ee.ExitCode()
	} else if err != nil {
		return 1
	}
	return 0
}

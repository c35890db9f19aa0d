// Command lockctl finds wedged locks, says who holds each one, and removes
// only those whose holder is provably gone.
//
// This file is the only one that knows about urfave/cli: it turns flags into
// plain values, calls the packages, and maps errors to exit codes.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"
)

// Exit codes, decided here and nowhere else.
const (
	exitOK        = 0 // nothing needs attention
	exitAttention = 1 // at least one lock has a verdict in the fail set
	exitError     = 2 // usage error, or a named path that cannot be read
)

// exitError carries an exit code out of an action without cli.Exit, which
// would call os.Exit through a package global.
type exitCode struct {
	code int
	err  error // printed as "lockctl: ..." when not nil
	hint string
}

func (e *exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func usageErr(format string, args ...any) error {
	return &exitCode{code: exitError, err: fmt.Errorf(format, args...), hint: "run 'lockctl help doctor' for usage"}
}

func main() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) }

// run is main with its writers injected, so tests drive it in-process.
func run(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	unknown := false
	app.CommandNotFound = func(c *cli.Context, name string) {
		unknown = true
		fmt.Fprintf(stderr, "lockctl: no command %q\nlockctl: hint: run 'lockctl help' for the list\n", name)
	}
	err := app.Run(args)
	if unknown {
		// urfave/cli returns nil after CommandNotFound.
		return exitError
	}
	if err == nil {
		return exitOK
	}
	var ec *exitCode
	if !errors.As(err, &ec) {
		// urfave/cli's own errors (unknown flag, missing value) are usage errors.
		ec = &exitCode{code: exitError, err: err, hint: "run 'lockctl help' for usage"}
	}
	if ec.err != nil {
		fmt.Fprintf(stderr, "lockctl: %s\n", ec.err)
	}
	if ec.hint != "" {
		fmt.Fprintf(stderr, "lockctl: hint: %s\n", ec.hint)
	}
	return ec.code
}

func newApp(stdout, stderr io.Writer) *cli.App {
	onUsage := func(_ *cli.Context, err error, _ bool) error {
		return &exitCode{code: exitError, err: err, hint: "run 'lockctl help' for usage"}
	}
	return &cli.App{
		Name:                      "lockctl",
		Usage:                     "find wedged locks, say who holds each one, remove only those whose holder is provably gone",
		Writer:                    stdout,
		ErrWriter:                 stderr,
		ExitErrHandler:            func(*cli.Context, error) {},
		OnUsageError:              onUsage,
		DisableSliceFlagSeparator: true,
		HideVersion:               true,
		Commands: append(append([]*cli.Command{doctorCommand(onUsage)}, lockCommands(onUsage)...),
			completionCommand(onUsage), manCommand(onUsage)),
	}
}

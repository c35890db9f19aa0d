// Package cli is lockctl's command line: the one package that knows about
// urfave/cli. It turns flags into plain values, calls the packages that do
// the work, prints their errors as "lockctl: ..." with a hint built from the
// command that failed, and maps every outcome to an exit status, all of
// which are named here.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"
)

// The exit statuses of lockctl.
const (
	ExitOK        = 0 // nothing needs attention
	ExitAttention = 1 // a lock has a verdict in the fail set; a lock command failed
	ExitError     = 2 // usage error, or a named path that cannot be read
	// ExitTimeout is the exit status of an acquire or run whose wait ran
	// out (EX_TEMPFAIL: try again later). For run it can collide only with
	// a command that itself exits 75.
	ExitTimeout = 75
	// ExitCannotRun and ExitNotFound are run's, as the shell's: the command
	// was found but could not be run, or was not found.
	ExitCannotRun = 126
	ExitNotFound  = 127
)

// exitCode carries an exit status out of an action without cli.Exit, which
// would call os.Exit through a package global.
type exitCode struct {
	code int
	err  error // printed as "lockctl: ..." when not nil
	hint string
	// usage: a usage error, whose hint names the help of the command that
	// failed (filled in by Run).
	usage bool
}

func (e *exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// usageErr is a usage error of the command being run.
func usageErr(format string, args ...any) error {
	return &exitCode{code: ExitError, err: fmt.Errorf(format, args...), usage: true}
}

// Run runs lockctl with args (args[0] is the program's name), writing to
// stdout and stderr, and returns its exit status. Tests drive it
// in-process; main calls it with the process's own.
func Run(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	unknown := false
	app.CommandNotFound = func(c *cli.Context, name string) {
		unknown = true
		fmt.Fprintf(stderr, "lockctl: no command %q\nlockctl: hint: run 'lockctl help' for the list\n", name)
	}
	err := app.Run(args)
	if unknown {
		// urfave/cli returns nil after CommandNotFound.
		return ExitError
	}
	if err == nil {
		return ExitOK
	}
	var ec *exitCode
	if !errors.As(err, &ec) {
		// urfave/cli's own errors (unknown flag, missing value) are usage errors.
		ec = &exitCode{code: ExitError, err: err, hint: "run 'lockctl help' for usage"}
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
	onUsage := func(c *cli.Context, err error, _ bool) error {
		return &exitCode{code: ExitError, err: err, hint: helpHint(c)}
	}
	app := &cli.App{
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
	for _, c := range app.Commands {
		c.Action = withUsageHint(c.Action)
	}
	return app
}

// withUsageHint gives the usage errors of action the hint to read the help
// of the command that failed.
func withUsageHint(action cli.ActionFunc) cli.ActionFunc {
	if action == nil {
		return nil
	}
	return func(c *cli.Context) error {
		err := action(c)
		var ec *exitCode
		if errors.As(err, &ec) && ec.usage && ec.hint == "" {
			ec.hint = helpHint(c)
		}
		return err
	}
}

// helpHint points at the help of the command c runs, or of lockctl.
func helpHint(c *cli.Context) string {
	if c != nil && c.Command != nil && c.Command.Name != "" && !c.Command.Hidden {
		return fmt.Sprintf("run 'lockctl help %s' for usage", c.Command.Name)
	}
	return "run 'lockctl help' for usage"
}

// isTerminal reports whether w is a terminal.
var isTerminal = func(w any) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

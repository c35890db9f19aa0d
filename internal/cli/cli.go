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
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

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
// in-process; main calls it with the process's own. It never honours the
// crash tests' LOCKCTL_TEST_PAUSE (RunWithTestHooks does).
func Run(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	unknown := false
	app.CommandNotFound = func(c *cli.Context, name string) {
		unknown = true
		hint := "run 'lockctl help' for the list"
		if s := nearest(name, c.App.VisibleCommands()); s != "" {
			hint = fmt.Sprintf("did you mean 'lockctl %s'? run 'lockctl help' for the list", s)
		}
		fmt.Fprintf(stderr, "lockctl: no command %q\nlockctl: hint: %s\n", name, hint)
	}
	err := app.Run(flagsFirst(app, bareSeconds(args)))
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
		Version:                   version(),
		Suggest:                   true,
		Commands: append(append([]*cli.Command{doctorCommand(onUsage)}, lockCommands(onUsage)...),
			whyCommand(onUsage), judgeCommand(onUsage), completionCommand(onUsage), manCommand(onUsage)),
	}
	for _, c := range app.Commands {
		c.Action = withUsageHint(c.Action)
		for _, f := range c.Flags {
			if b, ok := f.(*cli.BoolFlag); ok {
				b.DisableDefaultText = true // "(default: false)" says nothing
			}
		}
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

// version is lockctl's version: the module's, from the build information
// (a tagged "go install ...@v1.2.3" stamps it), else "devel", with the
// commit it was built from where the build recorded one.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (" + rev + dirty + ")"
	}
	return v + " " + runtime.Version()
}

// nearest is the command whose name is within two edits of name, if one
// is: a typo's likely meaning.
func nearest(name string, cmds []*cli.Command) string {
	best, bestD := "", 3
	for _, c := range cmds {
		if d := editDistance(name, c.Name); d < bestD {
			best, bestD = c.Name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// bareSeconds lets --timeout take a bare number of seconds, as flock -w
// does: "--timeout 5" is "--timeout 5s". Only lockctl's own arguments are
// read: nothing after "--" (run's CMD) is touched.
func bareSeconds(args []string) []string {
	out := append([]string(nil), args...)
	isNum := func(s string) bool {
		_, err := strconv.ParseFloat(s, 64)
		return err == nil && s != "" && !strings.ContainsAny(s, "eEinfINF")
	}
	for i := 1; i < len(out); i++ {
		switch a := out[i]; {
		case a == "--":
			return out
		case (a == "--timeout" || a == "-timeout") && i+1 < len(out) && isNum(out[i+1]):
			out[i+1] += "s"
			i++
		case strings.HasPrefix(a, "--timeout=") && isNum(strings.TrimPrefix(a, "--timeout=")):
			out[i] += "s"
		}
	}
	return out
}

// flagsFirst lets flags follow paths ("lockctl doctor DIR --json"), as
// most tools allow: urfave/cli stops reading flags at the first argument
// that is not one, so the flags of doctor, acquire and release are moved
// before their arguments. Nothing after "--" moves. For run, the
// arguments after LOCK are CMD's, except where "--" follows LOCK after
// nothing but run's own flags ("run L --timeout 1s -- cmd"): those move.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var cmd *cli.Command
	for _, c := range app.Commands {
		if c.Name == args[1] && (c.Name == "doctor" || c.Name == "acquire" || c.Name == "release" || c.Name == "run") {
			cmd = c
		}
	}
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	if cmd.Name == "run" && !runFlagsBeforeDash(args[2:], takesValue) {
		return args
	}
	flags, plain := []string{}, []string{}
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			plain = append(plain, rest[i:]...)
			i = len(rest)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			// "--" is never a flag's value: it ends the flags.
			if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) && rest[i+1] != "--" {
				i++
				flags = append(flags, rest[i])
			}
		default:
			plain = append(plain, a)
		}
	}
	return append(append(append([]string{}, args[:2]...), flags...), plain...)
}

// runFlagsBeforeDash reports whether run's arguments hold a "--" that
// follows LOCK (or, with --root, run's flags) after nothing but run's own
// flags and their values: only then are the flags after LOCK lockctl's.
// Anything else between LOCK and a "--" is CMD's ("run L grep -v -- x").
func runFlagsBeforeDash(rest []string, takesValue map[string]bool) bool {
	lock := false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			return lock
		case strings.HasPrefix(a, "-") && a != "-":
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			v, known := takesValue[name]
			if !known {
				return false
			}
			if v && !hasValue {
				i++
			}
		case !lock:
			lock = true
		default:
			return false // a second plain argument: CMD's
		}
	}
	return false
}

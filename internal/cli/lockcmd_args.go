// The lock commands' flags and arguments: the lock (LOCK or --root), the
// holder's pid (looking past forking wrappers), --kind, --timeout and
// --quiet, and run's CMD.

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/internal/why"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/report"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
	"github.com/urfave/cli/v2"
)

var timeoutFlag = &cli.DurationFlag{Name: "timeout", Usage: "give up after `D` (e.g. 30s, 5m); 0 waits for as long as it takes"}

var quietFlag = &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "say nothing while waiting (by default a wait longer than a second says, once, who holds the lock, and again when that changes)"}

// waitingNote is what a wait says on stderr about who holds the lock,
// unless --quiet.
func waitingNote(c *cli.Context, path string) func(string) {
	if c.Bool("quiet") {
		return nil
	}
	w := c.App.ErrWriter
	return func(who string) {
		// The holder's own wait, where it has one: the first link of the
		// chain lockctl why follows.
		if m := heldByPid.FindStringSubmatch(who); m != nil {
			if pid, err := strconv.Atoi(m[1]); err == nil {
				if b := why.Brief(pid); b != "" {
					who += ", " + b
				}
			}
		}
		fmt.Fprintf(w, "lockctl: waiting for %s: %s\n", path, report.Clean(who))
	}
}

var kindFlag = &cli.StringFlag{Name: "kind", Value: "auto", Usage: "the lock's `KIND`: dir (a directory holding its holder's record), flock (a file held by a kernel lock, as flock(1) takes it), or auto (flock for a file lockctl made as one or a known producer's kernel-lock file, dir otherwise)"}

// lockKind is the kind of the lock at path: --kind, or what it is known to
// be. by names who makes it a kernel lock.
func lockKind(c *cli.Context, path string) (k lock.Kind, by string, err error) {
	switch c.String("kind") {
	case "auto", "":
		k, by = lock.KindOf(path)
		return k, by, nil
	case "dir":
		return lock.KindDir, "", nil
	case "flock":
		return lock.KindKernel, "--kind flock", nil
	}
	return "", "", usageErr("--kind %q: want dir, flock or auto", c.String("kind"))
}

// notForKernelLocks refuses acquire and release on a kernel lock, which
// only a process that lives to keep it open can hold.
func notForKernelLocks(c *cli.Context, path string) error {
	k, by, err := lockKind(c, path)
	if err != nil || k != lock.KindKernel {
		return err
	}
	q := report.ShellQuote(path)
	hint := fmt.Sprintf("hold it with 'lockctl run --kind flock %s -- CMD', or in a shell with 'exec 9>>%s && flock 9' (released when the shell exits or runs 'exec 9>&-')", q, q)
	if scan.KernelCall(by) == "fcntl" {
		// flock(1) would not exclude a producer that locks with fcntl.
		hint = fmt.Sprintf("hold it with 'lockctl run %s -- CMD', whose lock excludes %s's fcntl lock (flock(1)'s does not)", q, by)
	}
	return &exitCode{code: ExitError,
		err:  fmt.Errorf("%s: %s is a kernel lock (%s): it is held only while a process keeps it open, and lockctl %s exits at once", c.Command.Name, path, by, c.Command.Name),
		hint: hint}
}

// notALock refuses at once, exit 2, a path acquire, run and reserve would
// otherwise wait on for ever: a FIFO, socket or device, a symbolic link
// that is no producer's lock, or a regular file whose bytes are neither
// empty nor a lock format lockctl reads (a text file, a data file). None
// of them is a lock, so nothing would ever free it; and no message
// suggests removing it. An empty file (flock(1)'s) and lockctl's own
// kernel-lock file stay acquirable as kernel locks (lockKind).
func notALock(c *cli.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	l, err := scan.ReadOne(filepath.Dir(abs), filepath.Base(abs))
	if n, ok := scan.IsNotLock(err); ok {
		return notDataErr(c, n)
	}
	if err != nil || l == nil || l.Err != nil {
		return nil // missing, or unreadable: the wait says why
	}
	var what string
	switch {
	case l.Kind == scan.KindOther:
		what = "a " + verdict.ModeWord(l.Info.Mode)
	case l.Kind == scan.KindSymlink && l.Producer == "":
		what = "a symbolic link, which lockctl never follows"
	case l.Kind == scan.KindFile && l.Producer == "" && l.Format == scan.FormatUnrecognized:
		what = "a file whose bytes are not a lock lockctl reads (it may be another program's data)"
	default:
		return nil
	}
	return &exitCode{code: ExitError,
		err:  fmt.Errorf("%s: %s is %s: it is not a lock, so nothing would ever free it, and lockctl will neither wait on it nor remove it", c.Command.Name, report.ShellQuote(abs), what),
		hint: "name a path of its own for the lock (a new name in the same directory, such as the file's name with .lock added)"}
}

// notDataFile refuses at once, exit 2, a lock command on a data file named
// like a lock: a dependency manifest such as Cargo.lock (scan.NotLock).
// It is a project's data, which no lock command may wait on, hold by a
// kernel lock, write or remove; and no message suggests removing it.
// Bytes that do not parse as a manifest are not refused here.
func notDataFile(c *cli.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	_, err = scan.ReadOne(filepath.Dir(abs), filepath.Base(abs))
	if n, ok := scan.IsNotLock(err); ok {
		return notDataErr(c, n)
	}
	return nil
}

func notDataErr(c *cli.Context, n *scan.NotLock) error {
	return &exitCode{code: ExitError,
		err:  fmt.Errorf("%s: %s is %s: it is data, not a lock, and lockctl will neither take it, wait on it nor remove it", c.Command.Name, report.ShellQuote(n.Path), n.What),
		hint: "name a path of its own for the lock (a new name in the same directory, such as the file's name with .lock added)"}
}

func lockPathArg(c *cli.Context, want int) (string, error) {
	path, _, err := lockArg(c, want)
	return path, err
}

// lockArg is a lock command's lock: LOCK, or the keyed lock of --root
// (then root is the tree's root, and LOCK is not given).
func lockArg(c *cli.Context, want int) (path, root string, err error) {
	if c.String("root") != "" {
		if want > 0 && c.NArg() != want-1 {
			return "", "", usageErr("%s: --root names the lock; leave out LOCK", c.Command.Name)
		}
		root, path, err := keyedLock(c)
		return path, root, err
	}
	if c.IsSet("top") {
		return "", "", usageErr("%s: --top goes with --root", c.Command.Name)
	}
	path, err = plainLockArg(c, want)
	return path, "", err
}

func plainLockArg(c *cli.Context, want int) (string, error) {
	if c.NArg() < 1 {
		return "", usageErr("%s: missing LOCK", c.Command.Name)
	}
	if want > 0 && c.NArg() != want {
		return "", usageErr("%s: want exactly one LOCK, got %d arguments", c.Command.Name, c.NArg())
	}
	path := c.Args().First()
	if err := lock.CheckPath(path); err != nil {
		return "", &exitCode{code: ExitError, err: err}
	}
	return path, nil
}

func holderPid(c *cli.Context) (int, error) {
	if p := c.Int("holder-pid"); p != 0 {
		if p < 0 {
			return 0, usageErr("--holder-pid %d is not a pid", p)
		}
		if kernel.EndlessPid(p) {
			return 0, usageErr("--holder-pid 1: pid 1 never exits, so the lock would be held for ever")
		}
		if l := kernel.Leader(p); l != 0 && l != p {
			// A thread's id names no process: the lock would read gone
			// when that thread exits, while its process goes on.
			return 0, usageErr("--holder-pid %d is a thread of process %d (%s), not a process: pass the process, --holder-pid %d", p, l, kernel.Command(l), l)
		}
		if p == os.Getpid() {
			return 0, usageErr("--holder-pid %d is this lockctl, which exits as soon as it is done: the lock would read gone at once; pass the process that runs the critical section (--holder-pid $$ from a shell)", p)
		}
		return p, nil
	}
	p, via := os.Getppid(), []string(nil)
	for i := 0; i < 16 && p > 0 && !kernel.EndlessPid(p); i++ {
		name := forkingWrapper(p)
		if name == "" {
			break
		}
		// timeout, sudo, strace ...: a wrapper that forks the caller's
		// lockctl and exits with it. It would hold the lock for a moment,
		// and the lock would read gone at once: the holder is above it.
		via = append(via, fmt.Sprintf("%s (pid %d)", name, p))
		p = kernel.Parent(p)
	}
	// Pid 1 of a container (a shell as its entrypoint) is an ordinary
	// holder: its namespace ends with it, and the lock reads gone then.
	if p <= 0 || kernel.EndlessPid(p) {
		why := "lockctl's parent is pid %d, which would hold the lock for ever"
		if len(via) > 0 {
			why = "above " + strings.Join(via, ", ") + " is pid %d, which would hold the lock for ever"
		}
		return 0, usageErr(why+"; pass the holder: --holder-pid $$ from a shell", p)
	}
	return p, nil
}

// forkingWrappers are the programs that run their command as a child and
// exit when it does, so that a lockctl acquire under them would record
// them, about to exit, as the holder. Programs that exec their command
// (env, nice, nohup, stdbuf, chrt, taskset) are replaced by it and never
// stand between.
var forkingWrappers = map[string]bool{
	"timeout": true, "sudo": true, "doas": true, "su": true, "runuser": true, "time": true,
	"strace": true, "ltrace": true, "valgrind": true, "setpriv": false, "pkexec": true,
}

// forkingWrapper names pid's program if it is a forking wrapper.
func forkingWrapper(pid int) string {
	if name := kernel.Program(pid); forkingWrappers[name] {
		return name
	}
	return ""
}

// checkTimeout refuses a negative --timeout, which would otherwise mean
// "wait for ever" as 0 does.
func checkTimeout(c *cli.Context) error {
	if d := c.Duration("timeout"); d < 0 {
		return usageErr("--timeout %s is negative: give a duration such as 30s (or a number of seconds), or 0 to wait for as long as it takes", d)
	}
	return nil
}

func waitContext(c *cli.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, interrupts...)
	go func() {
		if s, ok := <-sigs; ok {
			cancel(&interrupted{s})
		}
	}()
	stop := func() { signal.Stop(sigs); cancel(nil) }
	if d := c.Duration("timeout"); d > 0 {
		tctx, tcancel := context.WithTimeout(ctx, d)
		return tctx, func() { tcancel(); stop() }
	}
	return ctx, stop
}

// interrupted is why a wait ended on a signal (SIGINT, SIGTERM, SIGHUP):
// not a timeout.
type interrupted struct{ sig os.Signal }

func (e *interrupted) Error() string { return "interrupted by " + signalName(e.sig) }

// waitInterrupted is the error of a wait on path that a signal ended:
// 128+N, saying so; the wait has left nothing behind by then.
func waitInterrupted(ctx context.Context, path string) error {
	var in *interrupted
	if !errors.As(context.Cause(ctx), &in) {
		return nil
	}
	return signalledWait(in.sig, path)
}

// signalledWait is the error of a wait on path that signal s ended.
func signalledWait(s os.Signal, path string) error {
	return &exitCode{code: 128 + signalNumber(s), err: fmt.Errorf("interrupted by %s while waiting for %s; nothing was left behind", signalName(s), path)}
}

// runArgs reads run's LOCK -- CMD [ARGS...], or with --root, -- CMD
// [ARGS...] (then root is the tree's root).
func runArgs(c *cli.Context) (path, root string, cmdArgs []string, err error) {
	args := c.Args().Slice()
	want := "LOCK -- CMD [ARGS...]"
	if c.String("root") != "" {
		want = "--root PATH -- CMD [ARGS...]"
	} else if len(args) > 0 {
		path, args = args[0], args[1:]
	} else {
		return "", "", nil, usageErr("run: want %s", want)
	}
	if len(args) > 0 && args[0] == "--" {
		// urfave/cli keeps a "--" that follows a positional argument.
		args = args[1:]
	}
	if len(args) == 0 {
		return "", "", nil, usageErr("run: want %s", want)
	}
	if c.String("root") != "" {
		root, path, err = keyedLock(c)
		return path, root, args, err
	}
	if c.IsSet("top") {
		return "", "", nil, usageErr("run: --top goes with --root")
	}
	// A data file is refused whatever the kind (--kind flock included).
	return path, "", args, notDataFile(c, path)
}

// heldByPid finds the holder's pid in a wait's "held by pid N" message.
var heldByPid = regexp.MustCompile(`^held by pid ([0-9]+)\b`)

// markWait marks this process as waiting on the lock at path until the
// returned function is called: lockctl why reads the mark
// (kernel.MarkWait), so that a wait is said by the waiter itself.
func markWait(path string) (unmark func()) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return kernel.MarkWait(abs)
}

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/report"
	"github.com/lockctl/lockctl/scan"
	"github.com/urfave/cli/v2"
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

var timeoutFlag = &cli.DurationFlag{Name: "timeout", Usage: "give up after `D` (e.g. 30s, 5m); 0 waits for as long as it takes"}

var quietFlag = &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "say nothing while waiting (by default a wait longer than a second says, once, who holds the lock, and again when that changes)"}

// waitingNote is what a wait says on stderr about who holds the lock,
// unless --quiet.
func waitingNote(c *cli.Context, path string) func(string) {
	if c.Bool("quiet") {
		return nil
	}
	w := c.App.ErrWriter
	return func(who string) { fmt.Fprintf(w, "lockctl: waiting for %s: %s\n", path, report.Clean(who)) }
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
	return &exitCode{code: ExitError,
		err:  fmt.Errorf("%s: %s is a kernel lock (%s): it is held only while a process keeps it open, and lockctl %s exits at once", c.Command.Name, path, by, c.Command.Name),
		hint: fmt.Sprintf("hold it with 'lockctl run --kind flock %s -- CMD', or in a shell with 'exec 9>>%s && flock 9' (released when the shell exits or runs 'exec 9>&-')", q, q)}
}

func lockCommands(onUsage cli.OnUsageErrorFunc) []*cli.Command {
	return append([]*cli.Command{
		{
			Name:      "acquire",
			Usage:     "take a lock on behalf of the calling process (lockctl's parent)",
			ArgsUsage: "LOCK",
			Description: `The lock is held by the calling process (or --holder-pid) until it runs
'lockctl release LOCK', or until it exits, after which the lock reads as gone
and the next acquire breaks it. A gone holder's lock is broken; a live,
owner-less, foreign or unknown one is waited on and never broken.

Exit status: 0 acquired, 75 the wait timed out, 1 other failure, 2 usage.`,
			OnUsageError: onUsage,
			Flags: []cli.Flag{
				timeoutFlag,
				&cli.IntFlag{Name: "holder-pid", Usage: "the `PID` that holds the lock", DefaultText: "lockctl's parent"},
				kindFlag, quietFlag, rootFlag, topFlag, slotsFlag,
			},
			Action: acquireAction,
		},
		{
			Name:      "release",
			Usage:     "release a lock taken with acquire, for its recorded holder",
			ArgsUsage: "LOCK",
			Description: `Succeeds only when the lock's record names the holder it is asked for (the
calling process, or --holder-pid), checked by pid and start time; for any
other process it is refused and nothing is touched. This guards against
releasing another's lock by mistake; it is not access control: anyone who
may write the registry directory may name any pid with --holder-pid.

With --token, it gives up a reservation (lockctl reserve) that no worker has
adopted: the dispatcher's step when the dispatch provably failed.`,
			OnUsageError: onUsage,
			Flags: []cli.Flag{
				&cli.IntFlag{Name: "holder-pid", Usage: "the `PID` that holds the lock", DefaultText: "lockctl's parent"},
				&cli.StringFlag{Name: "token", Usage: "give up the reservation lockctl reserve printed `TOKEN` for, unadopted"},
				kindFlag, rootFlag, topFlag, slotsFlag,
			},
			Action: releaseAction,
		},
		{
			Name:      "run",
			Usage:     "run a command while holding a lock",
			ArgsUsage: "LOCK -- CMD [ARGS...]",
			Description: `Takes LOCK, runs CMD, releases LOCK when CMD exits, and exits with CMD's
status (128+N if CMD was killed by signal N). SIGINT, SIGTERM and SIGHUP are
forwarded to CMD. The lock records both lockctl and CMD: if lockctl is
killed, the lock stays held while CMD runs and reads as gone once neither
does.

CMD inherits the lock as file descriptor 3, with a kernel lock (flock) on
it, as flock(1) passes its lock: flock(1) on the same path waits while CMD,
or anything it forked that keeps fd 3, runs. With --kind flock (or a file
known to be a kernel lock) the lock is that kernel lock alone, on a file
that is never removed, and it excludes flock(1) and the fcntl locks of
dpkg, apt and Python's lockf on the same path.

Exit status: CMD's; 75 if the wait timed out before CMD started.`,
			OnUsageError: onUsage,
			Flags:        []cli.Flag{timeoutFlag, kindFlag, quietFlag, rootFlag, topFlag, slotsFlag},
			Action:       runAction,
		},
	}, append(reserveCommands(onUsage), gateCommands()...)...)
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
		if p == 1 {
			return 0, usageErr("--holder-pid 1: pid 1 never exits, so the lock would be held for ever")
		}
		if p == os.Getpid() {
			return 0, usageErr("--holder-pid %d is this lockctl, which exits as soon as it is done: the lock would read gone at once; pass the process that runs the critical section (--holder-pid $$ from a shell)", p)
		}
		return p, nil
	}
	p, via := os.Getppid(), []string(nil)
	for i := 0; i < 16 && p > 1; i++ {
		name := forkingWrapper(p)
		if name == "" {
			break
		}
		// timeout, sudo, strace ...: a wrapper that forks the caller's
		// lockctl and exits with it. It would hold the lock for a moment,
		// and the lock would read gone at once: the holder is above it.
		via = append(via, fmt.Sprintf("%s (pid %d)", name, p))
		p = parentOf(p)
	}
	if p <= 1 {
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
	name := ""
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		name = filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	} else {
		name = processName(pid)
	}
	if forkingWrappers[name] {
		return name
	}
	return ""
}

// parentOf is pid's parent, or 0 when it cannot be read.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
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
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if d := c.Duration("timeout"); d > 0 {
		tctx, tcancel := context.WithTimeout(ctx, d)
		return tctx, func() { tcancel(); cancel() }
	}
	return ctx, cancel
}

// acquireError maps an ended wait to an exit status, a message and the
// operator's next step.
func acquireError(path string, err error) error {
	var (
		held      *lock.HeldError
		ownerless *lock.OwnerlessError
		foreign   *lock.ForeignError
		unknown   *lock.UnknownError
	)
	q := report.ShellQuote(path)
	var again *lock.AlreadyHeldError
	var stuck *lock.GoneError
	var badPath *lock.BadPathError
	var slots *lock.SlotsHeldError
	switch {
	case errors.As(err, &badPath):
		return &exitCode{code: ExitError, err: err}
	case errors.As(err, &slots):
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("every slot is held: 'lockctl doctor %s' shows who holds each", report.ShellQuote(filepath.Dir(slots.Path)))}
	case errors.As(err, &stuck):
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("ask the lock's owner, or root, to run 'lockctl doctor --fix %s'", q)}
	case errors.As(err, &again):
		return &exitCode{code: ExitAttention, err: err, hint: fmt.Sprintf("it holds the lock already: release it first ('lockctl release %s'), or go on holding it", q)}
	case errors.As(err, &held) && held.Holder.Reserved:
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("it is reserved for a worker that has not started yet: wait for the worker to adopt it and finish, or for the grace to pass; 'lockctl doctor %s' shows the deadline", q)}
	case errors.As(err, &held) && held.Holder.Pid <= 0:
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("the kernel holds it for its holder: wait for it; 'lockctl doctor %s' shows what can be seen of it", q)}
	case errors.As(err, &held):
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("pid %d is running: wait for it, or deal with that process (not the lock); 'lockctl doctor %s' shows the details", held.Holder.Pid, q)}
	case errors.As(err, &ownerless) && ownerless.EmptyFile:
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("an empty file is one of two things, and its bytes cannot tell which. A kernel lock (flock(1) leaves one behind) is free while no process holds it: take it with 'lockctl run --kind flock %s -- CMD', which leaves the file in place. An existence lock's live holder may keep no file open: remove it (rm -- %s) only when the program that uses it is known not to be running", q, q)}
	case errors.As(err, &ownerless):
		how := "remove it by hand"
		if cmds := report.Commands(ownerless.Remove); len(cmds) > 0 {
			how = "remove it with: " + strings.Join(cmds, " && ")
		}
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("lockctl never breaks a lock without an owner record, because one taken a moment ago looks the same. If nothing is using it, %s. 'lockctl doctor' lists all such locks", how)}
	case errors.As(err, &foreign):
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("judge it where it was written: 'lockctl doctor %s' there", q)}
	case errors.As(err, &unknown):
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("'lockctl doctor %s' shows what could not be judged", q)}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &exitCode{code: ExitTimeout, err: err}
	}
	return &exitCode{code: ExitAttention, err: err}
}

// lockAndHolder reads acquire's and release's LOCK and holder pid.
func lockAndHolder(c *cli.Context) (string, string, int, error) {
	path, root, err := lockArg(c, 1)
	if err != nil {
		return "", "", 0, err
	}
	pid, err := holderPid(c)
	return path, root, pid, err
}

func acquireAction(c *cli.Context) error {
	path, root, pid, err := lockAndHolder(c)
	if err != nil {
		return err
	}
	if err := notForKernelLocks(c, path); err != nil {
		return err
	}
	if err := checkTimeout(c); err != nil {
		return err
	}
	slots, err := slotsOf(c)
	if err != nil {
		return err
	}
	ctx, cancel := waitContext(c)
	defer cancel()
	stderr := c.App.ErrWriter
	_, err = lock.Acquire(ctx, path, lock.Options{Kernel: judges.Kernel{}, Pid: pid, Command: processName(pid), Root: root, Slots: slots, Hook: lockHook(stderr), Waiting: waitingNote(c, path)})
	if err != nil {
		return acquireError(path, err)
	}
	return nil
}

func releaseAction(c *cli.Context) error {
	if tok := c.String("token"); tok != "" {
		if c.IsSet("holder-pid") {
			return usageErr("release: --token gives up a reservation, which no pid holds; leave out --holder-pid")
		}
		path, err := lockPathArg(c, 1)
		if err != nil {
			return err
		}
		if path, err = slotHolding(c, path, func(h *scan.Holder) bool { return h.Reserved && h.Token == tok }); err != nil {
			return err
		}
		return reservationError(path, lock.ReleaseReservation(path, tok, judges.Kernel{}))
	}
	path, _, pid, err := lockAndHolder(c)
	if err != nil {
		return err
	}
	if path, err = slotHolding(c, path, func(h *scan.Holder) bool { return h.Pid == int64(pid) }); err != nil {
		return err
	}
	if err := notForKernelLocks(c, path); err != nil {
		return err
	}
	var hooks []func(lock.Point)
	if h := lockHook(c.App.ErrWriter); h != nil {
		hooks = append(hooks, h)
	}
	if err := lock.ReleaseFor(path, pid, judges.Kernel{}, hooks...); err != nil {
		var bad *lock.BadPathError
		if errors.As(err, &bad) {
			return &exitCode{code: ExitError, err: err}
		}
		return &exitCode{code: ExitAttention, err: err}
	}
	return nil
}

// processName is the command name of pid, for the record.
func processName(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || len(b) < 2 {
		return ""
	}
	return string(b[:len(b)-1])
}

func runAction(c *cli.Context) error {
	path, root, cmdArgs, err := runArgs(c)
	if err != nil {
		return err
	}
	kind, _, err := lockKind(c, path)
	if err != nil {
		return err
	}
	if err := checkTimeout(c); err != nil {
		return err
	}
	slots, err := slotsOf(c)
	if err != nil {
		return err
	}
	if kind == lock.KindKernel {
		if slots > 1 {
			return usageErr("run: --slots counts holders of a directory lock; a kernel lock has one")
		}
		return runKernel(c, path, cmdArgs)
	}
	if _, err := exec.LookPath(cmdArgs[0]); err != nil {
		return &exitCode{code: ExitNotFound, err: fmt.Errorf("cannot run %s: %w", cmdArgs[0], err)}
	}
	stderr := c.App.ErrWriter
	rs := newRunSignals(c.Duration("timeout"))
	defer rs.stop()
	// CMD's process starts once the lock is built and flocked, inheriting
	// it, and before the record is written, which names it; it waits at
	// the gate until the lock is ours.
	var child *exec.Cmd
	var g gate
	l, err := lock.Acquire(rs.ctx, path, lock.Options{
		Also: []int{os.Getpid()}, Command: filepath.Base(cmdArgs[0]), Root: root, Slots: slots,
		Hook: lockHook(stderr), Waiting: waitingNote(c, path), Kernel: judges.Kernel{},
		Start: func(lockDir *os.File) (int, error) {
			s, err := rs.start(func() (*os.Process, error) {
				var err error
				child, g, err = startGated(c, cmdArgs, lockDir)
				if err != nil {
					return nil, err
				}
				return child.Process, nil
			})
			if s != nil {
				return 0, errSignalled
			}
			if err != nil {
				return 0, err
			}
			return child.Process.Pid, nil
		},
	})
	if err != nil {
		if child != nil {
			g.close() // the gate reads end-of-file and exits without running CMD
			_ = child.Wait()
		}
		var ec *exitCode
		switch s := rs.got(); {
		case s != nil:
			return &exitCode{code: 128 + signalNumber(s)}
		case errors.As(err, &ec):
			return err
		}
		return acquireError(path, err)
	}
	// The order matters: the gate opens only now that the lock, recording
	// CMD's process, is in place.
	werr := g.open()
	code := exitStatus(child.Wait())
	if werr != nil && code == ExitOK {
		code = ExitAttention
	}
	return ranWith(stderr, code, l.Release)
}

// errSignalled is Start's error when a signal came before CMD's process
// was made: run exits 128+N for it.
var errSignalled = errors.New("stopped by a signal before the command started")

// runSignals is run's handling of the signals lockctl gets: each ends a
// wait for the lock (ctx, which also ends at the timeout), and is passed on
// to CMD once CMD's process exists, unless the terminal has already
// delivered it (forwardSignal).
type runSignals struct {
	ctx    context.Context
	cancel context.CancelFunc
	sigs   chan os.Signal
	fg     bool
	mu     sync.Mutex
	child  *os.Process
	sig    os.Signal
}

func newRunSignals(timeout time.Duration) *runSignals {
	rs := &runSignals{sigs: make(chan os.Signal, 4), fg: inForeground()}
	signal.Notify(rs.sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	rs.ctx, rs.cancel = context.WithCancel(context.Background())
	if timeout > 0 {
		rs.ctx, rs.cancel = context.WithTimeout(context.Background(), timeout)
	}
	go func() {
		for s := range rs.sigs {
			rs.mu.Lock()
			rs.sig = s
			p := rs.child
			rs.mu.Unlock()
			rs.cancel() // while waiting for the lock: give up
			if p != nil && forwardSignal(s, rs.fg) {
				_ = p.Signal(s)
			}
		}
	}()
	return rs
}

// start starts CMD's process with begin, unless a signal came first: then
// it returns that signal, and begin is not called.
func (rs *runSignals) start(begin func() (*os.Process, error)) (os.Signal, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.sig != nil {
		return rs.sig, nil
	}
	p, err := begin()
	rs.child = p
	return nil, err
}

// got is the last signal lockctl got, or nil.
func (rs *runSignals) got() os.Signal {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.sig
}

func (rs *runSignals) stop() {
	signal.Stop(rs.sigs)
	rs.cancel()
}

// ranWith releases the lock CMD ran under and returns run's outcome for
// CMD's exit status code. A lock that cannot be released cleanly was
// broken while CMD ran: the critical section was not exclusive, so it is
// said, and success is not reported.
func ranWith(stderr io.Writer, code int, release func() error) error {
	if err := release(); err != nil {
		fmt.Fprintf(stderr, "lockctl: %s\n", err)
		if code == ExitOK {
			code = ExitAttention
		}
	}
	if code != ExitOK {
		return &exitCode{code: code}
	}
	return nil
}

// runKernel is run on a kernel lock. The lock is an open file with a
// kernel lock on it, and no record names a holder, so CMD needs no gate
// (startGated): it starts once the lock is taken, inheriting the locked
// file as fd 3, and it and what it forks go on holding the lock if
// lockctl is killed. That spares a second start of lockctl (issue 19).
func runKernel(c *cli.Context, path string, cmdArgs []string) error {
	stderr := c.App.ErrWriter
	rs := newRunSignals(c.Duration("timeout"))
	defer rs.stop()
	k, err := lock.AcquireKernel(rs.ctx, path, lock.Options{Kernel: judges.Kernel{}, Hook: lockHook(stderr), Waiting: waitingNote(c, path)})
	if err != nil {
		if s := rs.got(); s != nil {
			return &exitCode{code: 128 + signalNumber(s)}
		}
		return acquireError(path, err)
	}
	cmdPath, err := exec.LookPath(cmdArgs[0])
	if err != nil {
		k.Release()
		return &exitCode{code: ExitNotFound, err: fmt.Errorf("cannot run %s: %w", cmdArgs[0], err)}
	}
	cmd := exec.Command(cmdPath, cmdArgs[1:]...)
	cmd.Args[0] = cmdArgs[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, c.App.Writer, c.App.ErrWriter
	cmd.ExtraFiles = []*os.File{k.File()}
	s, err := rs.start(func() (*os.Process, error) {
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return cmd.Process, nil
	})
	switch {
	case s != nil:
		// Told to stop once the lock was ours but before CMD began.
		k.Release()
		return &exitCode{code: 128 + signalNumber(s)}
	case err != nil:
		k.Release()
		return &exitCode{code: ExitCannotRun, err: fmt.Errorf("cannot run %s: %w", cmdArgs[0], err)}
	}
	return ranWith(stderr, exitStatus(cmd.Wait()), k.Release)
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
	return path, "", args, nil
}

// gate is lockctl run's end of the pipe CMD's process waits on (fd 4 in
// it) before it becomes CMD.
type gate struct{ w *os.File }

// open lets CMD run.
func (g gate) open() error {
	_, err := g.w.WriteString("go\n")
	g.w.Close()
	return err
}

// close shuts the gate unopened: CMD's process exits without running CMD.
func (g gate) close() { g.w.Close() }

// startGated starts CMD's process held at a gate (gateCommand): it cannot
// run CMD until the lock is ours, and the lock can record it (pid and start
// time) before it does. exec keeps the pid and the start time, so the
// recorded identity is CMD's. It inherits lockDir, the lock's directory
// with lockctl's flock on it, as fd 3, and keeps it as CMD: CMD, and what
// it forks, hold the kernel lock while they run, as flock(1) passes its
// lock to its command.
func startGated(c *cli.Context, cmdArgs []string, lockDir *os.File) (child *exec.Cmd, g gate, err error) {
	child, err = gateCommand(cmdArgs)
	if err != nil {
		return nil, gate{}, &exitCode{code: ExitAttention, err: err}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, gate{}, &exitCode{code: ExitAttention, err: fmt.Errorf("cannot make the gate: %w", err)}
	}
	defer r.Close()
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, c.App.Writer, c.App.ErrWriter
	// A nil lockDir (no flock here) leaves fd 3 closed in CMD.
	child.ExtraFiles = []*os.File{lockDir, r}
	if err := child.Start(); err != nil {
		w.Close()
		return nil, gate{}, &exitCode{code: ExitAttention, err: fmt.Errorf("cannot start %s: %w", cmdArgs[0], err)}
	}
	return child, gate{w}, nil
}

// exitStatus is run's exit status for how CMD ended: its own, 128+N if
// signal N killed it, 1 if it could not be waited for.
func exitStatus(waitErr error) int {
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	case waitErr != nil:
		return ExitAttention
	}
	return ExitOK
}

// forwardSignal says whether run passes signal s on to CMD. CMD is in
// lockctl's process group, so a Ctrl-C or Ctrl-\ at the terminal whose
// foreground group that is (fg) has already reached CMD: passing it on
// would deliver it twice, and programs that read a second Ctrl-C as "force
// quit" abort hard. Every other signal lockctl gets is meant for what it
// runs, and is passed on.
func forwardSignal(s os.Signal, fg bool) bool {
	if fg && (s == os.Interrupt || s == syscall.SIGQUIT) {
		return false
	}
	return true
}

// GateCommand is the process that would hold CMD at run's gate, for
// internal/dev/bench/runfloor, which times the gate without a lock.
func GateCommand(cmdArgs []string) (*exec.Cmd, error) { return gateCommand(cmdArgs) }

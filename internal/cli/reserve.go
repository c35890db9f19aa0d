package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/report"
	"github.com/lockctl/lockctl/scan"
)

// The reservation commands: reserve, adopt, and release --token (in
// releaseAction). docs/record-format.md, "Reservations".

func reserveCommands(onUsage cli.OnUsageErrorFunc) []*cli.Command {
	return []*cli.Command{
		{
			Name:      "reserve",
			Usage:     "take a lock for a worker that has not started yet, for a grace period",
			ArgsUsage: "LOCK",
			Description: `Takes LOCK (waiting as acquire does) and prints a token. The lock is held,
whether or not the caller still runs, until the worker adopts it with
'lockctl adopt --token TOKEN LOCK', the caller gives it up with
'lockctl release --token TOKEN LOCK' (the dispatch provably failed), or
--grace passes with no adoption; then it reads as gone and the next acquire
breaks it. The deadline is on this boot's monotonic clock: a wall-clock step
cannot shorten it, and a reboot ends it. A dispatch that timed out, where
the worker may exist unlisted, should keep its reservation and let the
grace end it.

Exit status: 0 reserved (the token is on stdout), 75 the wait timed out,
128+N a signal N (SIGINT, SIGTERM, SIGHUP) ended the wait,
1 other failure, 2 usage.`,
			OnUsageError: onUsage,
			Flags: []cli.Flag{
				&cli.DurationFlag{Name: "grace", Usage: "how long the reservation waits for its worker, `D` (e.g. 30s); required"},
				timeoutFlag, kindFlag, quietFlag, rootFlag, topFlag, slotsFlag,
			},
			Action: reserveAction,
		},
		{
			Name:      "adopt",
			Usage:     "take over a reserved lock as its worker",
			ArgsUsage: "LOCK",
			Description: `Makes the calling process (or --holder-pid) the holder of the lock that
'lockctl reserve' printed TOKEN for, with no moment at which the lock is
free. It is then released like any acquired lock ('lockctl release LOCK'),
or reads as gone once the worker exits. A reservation whose grace has
passed, or that was released or broken, is not adopted.

Exit status: 0 adopted, 1 not adopted (the message says why), 2 usage.`,
			OnUsageError: onUsage,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "token", Usage: "the `TOKEN` lockctl reserve printed; required"},
				&cli.IntFlag{Name: "holder-pid", Usage: "the `PID` that holds the lock", DefaultText: "lockctl's parent"},
				kindFlag, rootFlag, topFlag, slotsFlag,
			},
			Action: adoptAction,
		},
	}
}

// reservationsRefuseKernelLocks refuses reserve on a kernel-lock path: a
// reservation outlives its reserver, and no process would hold the kernel
// lock that makes such a path held.
func reservationsRefuseKernelLocks(c *cli.Context, path string) error {
	k, by, err := lockKind(c, path)
	if err != nil || k != lock.KindKernel {
		return err
	}
	return &exitCode{code: ExitError,
		err:  fmt.Errorf("%s: %s is a kernel lock (%s): it is held only while a process keeps it open, and a reservation outlives the process that made it", c.Command.Name, path, by),
		hint: "reserve a directory lock instead (--kind dir, a path that is not a kernel-lock file)"}
}

// requireFlag is a usage error, on stderr, for a flag the command needs:
// urfave/cli's own Required check prints the whole help on stdout, into
// the caller's T=$(lockctl reserve ...).
func requireFlag(c *cli.Context, name string) error {
	if !c.IsSet(name) {
		return usageErr("%s: --%s is required", c.Command.Name, name)
	}
	return nil
}

func reserveAction(c *cli.Context) error {
	if err := requireFlag(c, "grace"); err != nil {
		return err
	}
	path, root, err := lockArg(c, 1)
	if err != nil {
		return err
	}
	if err := reservationsRefuseKernelLocks(c, path); err != nil {
		return err
	}
	if err := notALock(c, path); err != nil {
		return err
	}
	if err := checkTimeout(c); err != nil {
		return err
	}
	grace := c.Duration("grace")
	if grace <= 0 || grace > lock.MaxGrace {
		return usageErr("--grace %s: give the time the worker has to adopt the lock, such as 30s (at most %s)", grace, lock.MaxGrace)
	}
	slots, err := slotsOf(c)
	if err != nil {
		return err
	}
	ctx, cancel := waitContext(c)
	defer cancel()
	// The reserver is the caller, named in the record for the operator;
	// its exit frees nothing. lockctl itself stands in when the caller's
	// start time cannot be read.
	opts := lock.Options{Kernel: judges.Kernel{}, Pid: os.Getppid(), Command: processName(os.Getppid()), Root: root, Slots: slots, Hook: lockHook(c.App.ErrWriter), Waiting: waitingNote(c, path)}
	if opts.Pid <= 1 {
		opts = lock.Options{Kernel: judges.Kernel{}, Root: root, Slots: slots, Hook: opts.Hook, Waiting: opts.Waiting}
	}
	unmark := markWait(path)
	r, err := lock.Reserve(ctx, path, grace, opts)
	unmark()
	if err != nil {
		if ierr := waitInterrupted(ctx, path); ierr != nil {
			return ierr
		}
		return acquireError(path, err)
	}
	fmt.Fprintln(c.App.Writer, r.Token)
	return nil
}

func adoptAction(c *cli.Context) error {
	if err := requireFlag(c, "token"); err != nil {
		return err
	}
	path, root, pid, err := lockAndHolder(c)
	if err != nil {
		return err
	}
	if err := notForKernelLocks(c, path); err != nil {
		return err
	}
	token := c.String("token")
	slots, err := slotsOf(c)
	if err != nil {
		return err
	}
	if path, err = slotHolding(c, path, func(h *scan.Holder) bool { return h.Reserved && h.Token == token }); err != nil {
		return err
	}
	_, err = lock.Adopt(path, token, lock.Options{Kernel: judges.Kernel{}, Pid: pid, Command: processName(pid), Root: root, Slots: slots, Hook: lockHook(c.App.ErrWriter)})
	return reservationError(path, err)
}

// reservationError maps adopt's and release --token's errors to an exit
// status and the next step.
func reservationError(path string, err error) error {
	var (
		bad   *lock.BadPathError
		not   *lock.NotReservedError
		ended *lock.ReservationEndedError
	)
	q := report.ShellQuote(path)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &bad):
		return &exitCode{code: ExitError, err: err}
	case errors.As(err, &ended):
		return &exitCode{code: ExitAttention, err: err, hint: fmt.Sprintf("the worker started too late: its dispatcher should reserve %s again and send the work again", q)}
	case errors.As(err, &not):
		return &exitCode{code: ExitAttention, err: err, hint: fmt.Sprintf("'lockctl doctor %s' shows what holds it now", q)}
	}
	return &exitCode{code: ExitAttention, err: err}
}

var rootFlag = &cli.StringFlag{Name: "root", Usage: "the lock of `PATH`'s tree, in place of LOCK: its git or Mercurial top level (a symbolic link, a bind mount or a subdirectory of it names the same lock), kept in $LOCKCTL_REGISTRY (default " + lock.DefaultRegistry + ")"}

var topFlag = &cli.BoolFlag{Name: "top", Usage: "with --root: PATH is the tree's top itself (for a tree in no git or Mercurial repository)"}

// keyedLock resolves --root (and --top) to the root and the path of its
// keyed lock in the registry.
func keyedLock(c *cli.Context) (root, path string, err error) {
	r, err := lock.FindRoot(c.String("root"), c.Bool("top"))
	if err != nil {
		var bad *lock.BadPathError
		if errors.As(err, &bad) {
			return "", "", &exitCode{code: ExitError, err: fmt.Errorf("--root %w", err)}
		}
		return "", "", &exitCode{code: ExitAttention, err: err}
	}
	if c.IsSet("kind") && c.String("kind") == "flock" {
		return "", "", usageErr("--root takes a directory lock, kept in the registry; --kind flock does not go with it")
	}
	if path, err = lock.RootLock(r); err != nil {
		return "", "", &exitCode{code: ExitAttention, err: err}
	}
	return r.Path, path, nil
}

var slotsFlag = &cli.IntFlag{Name: "slots", Value: 1, Usage: "a counting lock of `N` slots: up to N holders at once (slot 1 is LOCK, slot i LOCK's name with .slot<i> before .lock); every caller of the lock must give the same N"}

// slotsOf is --slots, checked.
func slotsOf(c *cli.Context) (int, error) {
	n := c.Int("slots")
	if n < 1 || n > lock.MaxSlots {
		return 0, usageErr("--slots %d: give 1 to %d", n, lock.MaxSlots)
	}
	return n, nil
}

// slotHolding is the slot of path that holds what holds says, for a
// command that names a holder or a token, not a slot.
func slotHolding(c *cli.Context, path string, holds func(h *scan.Holder) bool) (string, error) {
	n, err := slotsOf(c)
	if err != nil {
		return "", err
	}
	p, err := lock.FindSlot(path, n, holds)
	if err != nil {
		return "", &exitCode{code: ExitAttention, err: err}
	}
	return p, nil
}

// The lock commands, acquire, release and run, and their actions; their
// flags and arguments are in lockcmd_args.go, their errors in
// lockcmd_errors.go, run's command in lockcmd_run.go.

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/scan"
	"github.com/urfave/cli/v2"
)

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

Exit status: 0 acquired, 75 the wait timed out, 128+N a signal N (SIGINT,
SIGTERM, SIGHUP) ended the wait, leaving nothing behind, 1 other failure,
2 usage.`,
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
forwarded to CMD, once: outside a terminal's foreground (cron, systemd, CI)
CMD runs in a process group of its own, so that a signal to lockctl's whole
group reaches it only through lockctl; a SIGKILL, which cannot be passed on,
stops lockctl alone, and CMD runs on holding the lock. (With systemd,
KillMode=mixed signals lockctl alone; control-group signals CMD directly as
well.) The lock records both lockctl and CMD: if lockctl is
killed, the lock stays held while CMD runs and reads as gone once neither
does.

CMD inherits the lock as file descriptor 3, with a kernel lock (flock) on
it, as flock(1) passes its lock: flock(1) on the same path waits while CMD,
or anything it forked that keeps fd 3, runs. When CMD exits, the lock is
removed only if nothing else holds it, waits for it or has it open: a child
that kept fd 3, or a flock(1) waiting on the path, keeps it in place (run
says so), held by that process until it closes it, as flock(1) would; then
the next acquire takes it. With --kind flock (or a file
known to be a kernel lock) the lock is that kernel lock alone, on a file
that is never removed, and it excludes flock(1) and the fcntl locks of
dpkg, apt and Python's lockf on the same path.

Exit status: CMD's; 75 if the wait timed out before CMD started, 128+N if a
signal N ended the wait.`,
			OnUsageError: onUsage,
			Flags:        []cli.Flag{timeoutFlag, kindFlag, quietFlag, rootFlag, topFlag, slotsFlag},
			Action:       runAction,
		},
	}, append(reserveCommands(onUsage), gateCommands()...)...)
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
	if err := notDataFile(c, path); err != nil {
		return err
	}
	if err := notForKernelLocks(c, path); err != nil {
		return err
	}
	if err := notALock(c, path); err != nil {
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
	unmark := markWait(path)
	_, err = lock.Acquire(ctx, path, lock.Options{Kernel: judges.Kernel{}, Pid: pid, Command: processName(pid), Root: root, Slots: slots, Hook: lockHook(stderr), Waiting: waitingNote(c, path)})
	unmark()
	if err != nil {
		if ierr := waitInterrupted(ctx, path); ierr != nil {
			return ierr
		}
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
	path, pid, err := releaseHolder(c)
	if err != nil {
		return err
	}
	if err := notDataFile(c, path); err != nil {
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

// releaseHolder is the lock release names and the process it releases
// for: --holder-pid, or else this very process where the lock's record
// names it (a shell that exec'd release as its last command: "sh -c
// 'lockctl acquire L && work; lockctl release L'", where exec keeps the
// shell's pid and start time, which ReleaseFor checks), or else the
// caller, as acquire finds it.
func releaseHolder(c *cli.Context) (path string, pid int, err error) {
	if !c.IsSet("holder-pid") {
		path, _, err := lockArg(c, 1)
		if err != nil {
			return "", 0, err
		}
		self := os.Getpid()
		n, err := slotsOf(c)
		if err != nil {
			return "", 0, err
		}
		if recordNames(path, n, self) {
			return path, self, nil
		}
	}
	path, _, pid, err = lockAndHolder(c)
	return path, pid, err
}

// recordNames reports whether the lock at path (or one of its n slots)
// holds a record naming pid.
func recordNames(path string, n int, pid int) bool {
	p, err := lock.FindSlot(path, n, func(h *scan.Holder) bool { return h.Pid == int64(pid) })
	if err != nil {
		return false
	}
	if p, err = filepath.Abs(p); err != nil {
		return false
	}
	cur, err := scan.ReadOne(filepath.Dir(p), filepath.Base(p))
	return err == nil && cur != nil && len(cur.Holders) == 1 && cur.Holders[0].Holder != nil && cur.Holders[0].Holder.Pid == int64(pid)
}

// processName is the command name of pid, for the record.
func processName(pid int) string { return kernel.Command(pid) }

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
		return runKernel(c, path, cmdArgs, slots)
	}
	if err := notALock(c, path); err != nil {
		return err
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
	unmark := markWait(path)
	l, err := lock.Acquire(rs.ctx, path, lock.Options{
		Also: []int{os.Getpid()}, Command: filepath.Base(cmdArgs[0]), Root: root, Slots: slots,
		Hook: lockHook(stderr), Waiting: waitingNote(c, path), Kernel: judges.Kernel{},
		Start: func(lockDir *os.File) (int, error) {
			s, err := rs.start(func() (*os.Process, error) {
				var err error
				child, g, err = startGated(c, cmdArgs, lockDir, rs.fg)
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
	unmark()
	if err != nil {
		if child != nil {
			g.close() // the gate reads end-of-file and exits without running CMD
			_ = child.Wait()
		}
		var ec *exitCode
		switch s := rs.got(); {
		case s != nil:
			return signalledWait(s, path)
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

// runKernel is run on a kernel lock. The lock is an open file with a
// kernel lock on it, and no record names a holder, so CMD needs no gate
// (startGated): it starts once the lock is taken, inheriting the locked
// file as fd 3, and it and what it forks go on holding the lock if
// lockctl is killed. That spares a second start of lockctl (issue 19).
func runKernel(c *cli.Context, path string, cmdArgs []string, slots int) error {
	if slots > 1 {
		return usageErr("run: --slots counts holders of a directory lock; a kernel lock has one")
	}
	stderr := c.App.ErrWriter
	rs := newRunSignals(c.Duration("timeout"))
	defer rs.stop()
	unmark := markWait(path)
	k, err := lock.AcquireKernel(rs.ctx, path, lock.Options{Kernel: judges.Kernel{}, Hook: lockHook(stderr), Waiting: waitingNote(c, path)})
	unmark()
	if err != nil {
		if s := rs.got(); s != nil {
			return signalledWait(s, path)
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
	ownGroup(cmd, rs.fg)
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

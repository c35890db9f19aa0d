// run's command: the signals lockctl passes on to it, the gate it waits
// at until the lock is ours, the release when it ends, and its exit status.

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/lock"
	"github.com/urfave/cli/v2"
)

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
	err := release()
	if held := new(*lock.StillHeldError); errors.As(err, held) {
		// Not a failure: the lock lives on in the process holding it,
		// as flock(1)'s does, and CMD's status stands.
		fmt.Fprintf(stderr, "lockctl: note: %s\n", err)
		err = nil
	}
	if err != nil {
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
func startGated(c *cli.Context, cmdArgs []string, lockDir *os.File, fg bool) (child *exec.Cmd, g gate, err error) {
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
	ownGroup(child, fg)
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

// forwardSignal says whether run passes signal s on to CMD. At a
// terminal's foreground CMD is in lockctl's process group (ownGroup), so a Ctrl-C or Ctrl-\ at the terminal whose
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

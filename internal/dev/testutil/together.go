//go:build linux

package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// Gated is a process held at a barrier by StartTogether.
type Gated struct {
	Cmd    *exec.Cmd
	Stderr bytes.Buffer
	// Out is what it wrote on stdout after "ready", and Err why it could
	// not be read, once Release has returned.
	Out   []byte
	Err   error
	stdin io.WriteCloser
	out   *bufio.Reader
}

// StartTogether starts each of cmds, which must each print "ready" on a
// line of its own and then wait until its standard input closes, and
// returns once every one has said so (failing the test if one says
// anything else). Cleanup kills and reaps any still running.
func StartTogether(t T, cmds ...*exec.Cmd) []*Gated {
	t.Helper()
	gs := make([]*Gated, len(cmds))
	for i, c := range cmds {
		g := &Gated{Cmd: c}
		c.Stderr = &g.Stderr
		var err error
		if g.stdin, err = c.StdinPipe(); err != nil {
			t.Fatalf("%v", err)
		}
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatalf("%v", err)
		}
		g.out = bufio.NewReader(out)
		if c.WaitDelay == 0 {
			// A child of c that keeps its stderr must not hold Wait.
			c.WaitDelay = KillWait
		}
		if err := c.Start(); err != nil {
			t.Fatalf("cannot start %v: %v", c.Args, err)
		}
		t.Cleanup(func() {
			if c.ProcessState == nil {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		})
		gs[i] = g
	}
	for i, g := range gs {
		what := fmt.Sprintf("process %d (pid %d, %q) to say ready", i, g.Cmd.Process.Pid, g.Cmd.Args)
		if line, err := ReadLine(t, ReadyWait, what, g.out); line != "ready\n" {
			t.Fatalf("process %d said %q (%v), want ready; stderr:\n%s", i, line, err, g.Stderr.String())
		}
	}
	return gs
}

// Release opens the barrier for every one of gs at once and reads what each
// writes (into Out) until it closes its stdout, failing the test if they
// have not within timeout (killing them). The caller then waits for each
// (Cmd.Wait) and judges its exit status.
func Release(t T, timeout time.Duration, gs []*Gated) {
	t.Helper()
	for _, g := range gs {
		g.stdin.Close()
	}
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Out, g.Err = io.ReadAll(g.out)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		for _, g := range gs {
			_ = g.Cmd.Process.Kill()
		}
		var pids []int
		for _, g := range gs {
			pids = append(pids, g.Cmd.Process.Pid)
		}
		Await(t, KillWait, fmt.Sprintf("the stdout of the SIGKILLed processes %v to close", pids), done)
		t.Fatalf("the %d processes did not finish within %s", len(gs), timeout)
	}
}

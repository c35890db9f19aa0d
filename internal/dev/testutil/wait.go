//go:build linux

package testutil

import (
	"bufio"
	"time"
)

// KillWait is how long a test waits for a process it has SIGKILLed to be
// reaped, or for the pipes it held to close: the kernel ends a killed
// process at once, so only a wedged machine (or a child of it that keeps
// the pipe) takes this long, and then the test must say so, not hang.
const KillWait = 30 * time.Second

// ReadyWait is how long a test waits for a process it started to say it
// is ready: far longer than any takes on a loaded machine, but a bound.
const ReadyWait = 30 * time.Second

// Within waits for ch to yield a value (or be closed) for at most timeout,
// and reports whether it did. It is for goroutines other than the test's,
// which must not call Fatalf: they report a false with Errorf and return.
func Within[V any](ch <-chan V, timeout time.Duration) (V, bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v, true
	case <-timer.C:
		var zero V
		return zero, false
	}
}

// Await waits for ch to yield a value (or be closed), and fails the test
// naming what it waited for if it has not within timeout. Call it from the
// goroutine that runs the test.
func Await[V any](t T, timeout time.Duration, what string, ch <-chan V) V {
	t.Helper()
	v, ok := Within(ch, timeout)
	if !ok {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
	return v
}

// ReadLine reads a line from r (a process's output), failing the test
// naming what it waited for if none has come within timeout. It returns
// what ReadString returns, for the caller to judge. On a timeout the read
// goes on in the background until r's writer closes it (the test's cleanup
// kills the process): r must not be used again.
func ReadLine(t T, timeout time.Duration, what string, r *bufio.Reader) (string, error) {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := r.ReadString('\n')
		ch <- result{line, err}
	}()
	res := Await(t, timeout, what, ch)
	return res.line, res.err
}

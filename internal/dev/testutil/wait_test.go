//go:build linux

package testutil

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeT records a Fatalf and ends its goroutine, as testing.T does.
type fakeT struct{ failed string }

func (f *fakeT) Helper()        {}
func (f *fakeT) Cleanup(func()) {}
func (f *fakeT) Fatalf(format string, a ...any) {
	f.failed = fmt.Sprintf(format, a...)
	runtime.Goexit()
}

// failing runs body as a test would and returns what it failed with.
func failing(body func(T)) string {
	f := &fakeT{}
	done := make(chan struct{})
	go func() { defer close(done); body(f) }()
	<-done
	return f.failed
}

func TestAwaitNamesWhatItWaitedFor(t *testing.T) {
	got := failing(func(t T) { Await(t, 10*time.Millisecond, "the holder to say ready", make(chan struct{})) })
	if !strings.Contains(got, "the holder to say ready") || !strings.Contains(got, "10ms") {
		t.Errorf("Await on a silent channel failed with %q, want what it waited for and for how long", got)
	}
	ch := make(chan int, 1)
	ch <- 7
	if got := failing(func(t T) {
		if v := Await(t, time.Second, "seven", ch); v != 7 {
			t.Fatalf("got %d", v)
		}
	}); got != "" {
		t.Errorf("Await on a ready channel: %q", got)
	}
}

func TestReadLineIsBounded(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	got := failing(func(t T) { ReadLine(t, 10*time.Millisecond, "pid 42 to say ready", bufio.NewReader(r)) })
	if !strings.Contains(got, "pid 42 to say ready") {
		t.Errorf("ReadLine on a silent pipe failed with %q", got)
	}
	r2, w2 := io.Pipe()
	go func() { fmt.Fprintln(w2, "ready"); w2.Close() }()
	var line string
	if got := failing(func(t T) { line, _ = ReadLine(t, 10*time.Second, "ready", bufio.NewReader(r2)) }); got != "" || line != "ready\n" {
		t.Errorf("ReadLine read %q, failed %q", line, got)
	}
}

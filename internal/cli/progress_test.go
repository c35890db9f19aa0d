package cli

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Progress shows on a terminal once a scan runs long, redraws one line, and
// erases it at the end; it never shows on a pipe, nor when not wanted.
func TestProgress(t *testing.T) {
	oldAfter, oldEvery, oldTTY := progressAfter, progressEvery, isTerminal
	defer func() { progressAfter, progressEvery, isTerminal = oldAfter, oldEvery, oldTTY }()
	progressAfter, progressEvery = 0, time.Millisecond

	var entries, found, judged atomic.Int64
	entries.Store(1234)
	found.Store(5)
	judged.Store(4)

	isTerminal = func(any) bool { return true }
	var tty syncBuffer
	stop := startProgress(&tty, true, &entries, &found, &judged)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(tty.String(), "1234 entries walked, 5 locks found, 4 judged") {
		if time.Now().After(deadline) {
			t.Fatalf("no progress line on a terminal; got %q", tty.String())
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	if out := tty.String(); !strings.HasSuffix(out, "\r\x1b[K") || strings.Contains(out, "\n") {
		t.Errorf("progress = %q, want one line redrawn in place and erased at the end", out)
	}

	var quiet syncBuffer
	startProgress(&quiet, false, &entries, &found, &judged)()
	isTerminal = func(any) bool { return false }
	var pipe syncBuffer
	startProgress(&pipe, true, &entries, &found, &judged)()
	if quiet.String() != "" || pipe.String() != "" {
		t.Errorf("progress written when not wanted (%q) or to a pipe (%q)", quiet.String(), pipe.String())
	}
}

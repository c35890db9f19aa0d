package cli

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progressAfter is how long a scan runs before progress is shown, and
// progressEvery how often it is redrawn.
var (
	progressAfter = time.Second
	progressEvery = 250 * time.Millisecond
)

// startProgress shows, on stderr when it is a terminal and want is true, how
// far a scan that runs longer than progressAfter has got: entries walked,
// locks found and judged. It redraws one line in place and erases it when
// the returned stop is called. Never on a pipe, so logs stay clean.
func startProgress(stderr io.Writer, want bool, entries, found, judged *atomic.Int64) (stop func()) {
	if !want || !isTerminal(stderr) {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-done:
			return
		case <-time.After(progressAfter):
		}
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			fmt.Fprintf(stderr, "\rlockctl: %d entries walked, %d locks found, %d judged\x1b[K", entries.Load(), found.Load(), judged.Load())
			select {
			case <-done:
				fmt.Fprint(stderr, "\r\x1b[K")
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

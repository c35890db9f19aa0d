package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
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
		// Once the line is drawn, an interrupt must not leave it on the
		// terminal: erase it, then die of the signal as before.
		sig := make(chan os.Signal, 1)
		for _, s := range interrupts {
			if !signal.Ignored(s) { // nohup, or a background job: stays ignored
				signal.Notify(sig, s)
			}
		}
		defer signal.Stop(sig)
		for {
			fmt.Fprintf(stderr, "\rlockctl: %d entries walked, %d locks found, %d judged\x1b[K", entries.Load(), found.Load(), judged.Load())
			select {
			case <-done:
				fmt.Fprint(stderr, "\r\x1b[K")
				return
			case s := <-sig:
				fmt.Fprint(stderr, "\r\x1b[K")
				reraise(s)
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// reraise dies of s, as the process would have had it not been caught:
// the default action is restored and s sent again. Where that does not end
// the process, it exits as a shell reports a death by SIGINT.
func reraise(s os.Signal) {
	signal.Reset(s)
	if p, err := os.FindProcess(os.Getpid()); err == nil && p.Signal(s) == nil {
		time.Sleep(time.Second)
	}
	os.Exit(128 + signalNumber(s))
}

package lock

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestReleaseWatchFires: the watch on a lock directory fires when the
// directory is removed (a release) or moved away (a break's claim), and
// closing it ends it.
func TestReleaseWatchFires(t *testing.T) {
	for _, how := range []string{"removed", "moved"} {
		dir := t.TempDir()
		p := filepath.Join(dir, "x.lock")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		w := releaseWatch(p)
		if w == nil {
			t.Skip("no inotify here")
		}
		if how == "removed" {
			err := os.Remove(p)
			if err != nil {
				t.Fatal(err)
			}
		} else if err := os.Rename(p, p+".dead.1.2"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.fired():
		case <-time.After(10 * time.Second):
			t.Fatalf("the watch did not fire when the lock directory was %s", how)
		}
		w.Close()
	}
}

// TestAbandonedWaitsLeaveNothing: waits that give up on a lock that stays
// held leave no goroutine and no descriptor behind (each wait's watch is
// closed when it ends).
func TestAbandonedWaitsLeaveNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	held, err := Acquire(context.Background(), p, Options{Kernel: kern})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	fds := func() int { ents, _ := os.ReadDir("/proc/self/fd"); return len(ents) }
	wait := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		// The same process asking again would be refused at once: ask
		// for another holder, this process's parent.
		if _, err := Acquire(ctx, p, Options{Kernel: kern, Pid: os.Getppid()}); err == nil {
			t.Fatal("Acquire of a held lock succeeded")
		}
	}
	wait() // the first wait's one-off costs (the kernel's tables, caches)
	g0, f0 := runtime.NumGoroutine(), fds()
	for range 20 {
		wait()
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > g0 || fds() > f0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 abandoned waits: %d goroutines (was %d), %d descriptors (was %d)", runtime.NumGoroutine(), g0, fds(), f0)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

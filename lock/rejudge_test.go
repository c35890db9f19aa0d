//go:build linux

package lock

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/verdict"
)

// TestAcquireSeesItsHolderDieWhileWaiting guards the invariant of the one
// wiring (judges.Acquire): every acquire try asks the kernel afresh. An
// acquire waits on a live holder; the holder dies during the wait; the
// next try judges it gone, breaks the lock and takes it. An acquire whose
// judge cached the holder's state would wait on a dead process until its
// deadline.
func TestAcquireSeesItsHolderDieWhileWaiting(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	c := testutil.Sleeper(t)
	if _, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: c.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	once := false
	l, err := Acquire(ctx, p, Options{Kernel: kern, Waiting: func(who string) {
		// Told once the wait has judged the holder live for a second:
		// now the holder dies.
		if !once {
			once = true
			killAndReap(t, c)
		}
	}})
	if err != nil {
		t.Fatalf("Acquire while its holder died = %v, want the lock", err)
	}
	if !once {
		t.Fatal("the acquire never waited on the live holder")
	}
	if r := judge(t, p); r.Verdict != verdict.Live || r.Holder == nil || r.Holder.Pid != l.Holder.Pid {
		t.Errorf("after the wait, the lock is %s (%s), want it live and ours", r.Verdict, r.Reason)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestNoKernelFailsClosed: a caller that wires in no kernel can neither
// take a lock nor break one, even one whose holder is gone, and can
// release nothing on another's behalf: nothing is ever judged with the
// real kernel by accident.
func TestNoKernelFailsClosed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	c := testutil.Sleeper(t)
	if _, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: c.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	killAndReap(t, c)
	if r := judge(t, p); r.Verdict != verdict.Gone {
		t.Fatalf("setup: judged %s (%s), want gone", r.Verdict, r.Reason)
	}
	before := testutil.Snapshot(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, p, Options{}); !errors.Is(err, errNoFence) {
		t.Errorf("Acquire with no kernel = %v, want %v", err, errNoFence)
	}
	var not *NotHolderError
	if err := ReleaseFor(p, c.Process.Pid, nil); !errors.As(err, &not) {
		t.Errorf("ReleaseFor with no kernel = %v, want *NotHolderError", err)
	}
	testutil.SameTree(t, dir, before)
}

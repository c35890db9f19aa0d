package lock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

func judge(t *testing.T, path string) verdict.Result {
	t.Helper()
	l, err := scan.ReadOne(filepath.Dir(path), filepath.Base(path))
	if err != nil || l == nil {
		t.Fatalf("ReadOne(%s) = %v, %v", path, l, err)
	}
	j := verdict.Judge{Host: localHost(), Probe: kernel.KernelProbe{}}
	return j.Judge(l)
}

func TestAcquireRelease(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	l, err := Acquire(context.Background(), p, Options{Kernel: kern})
	if err != nil {
		t.Fatal(err)
	}
	if r := judge(t, p); r.Verdict != verdict.Live || r.Lock.Format != scan.FormatLockctl {
		t.Fatalf("judged a held lock %s (%s) format %s, want live lockctl", r.Verdict, r.Reason, r.Lock.Format)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 0 {
		t.Fatalf("after Release the registry holds %v, want nothing", ents)
	}
}

func TestAcquireBreaksGoneHolder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: c.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	c.Process.Kill()
	c.Wait()
	if r := judge(t, p); r.Verdict != verdict.Gone {
		t.Fatalf("judged %s (%s), want gone", r.Verdict, r.Reason)
	}
	l, err := Acquire(context.Background(), p, Options{Kernel: kern})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestAcquireWaitsOnLiveHolder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	l, err := Acquire(context.Background(), p, Options{Kernel: kern})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = Acquire(ctx, p, Options{Kernel: kern})
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.Pid != int64(os.Getpid()) {
		t.Fatalf("Acquire on a held lock = %v, want *HeldError naming pid %d", err, os.Getpid())
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire error %v does not wrap the context's error", err)
	}
}

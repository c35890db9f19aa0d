//go:build linux

package lock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// TestAcquireKernelLocksWhatThePathNames: a kernel-lock file replaced
// between its open and its lock is let go and the new one is locked: a lock
// on a file the path no longer names would exclude nobody.
func TestAcquireKernelLocksWhatThePathNames(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.lock")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	replaced := false
	hook := func(pt Point) {
		if pt != KernelOpened || replaced {
			return
		}
		replaced = true
		if err := os.WriteFile(p+".new", nil, 0o644); err != nil {
			t.Error(err)
		}
		if err := os.Rename(p+".new", p); err != nil {
			t.Error(err)
		}
	}
	k, err := AcquireKernel(context.Background(), p, Options{Kernel: kern, Hook: hook})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	if !replaced {
		t.Fatal("the hook never ran")
	}
	held, err := k.File().Stat()
	if err != nil {
		t.Fatal(err)
	}
	now, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(held, now) {
		t.Errorf("AcquireKernel locked inode %d, but %s is inode %d now: the lock excludes nobody", held.Sys().(*syscall.Stat_t).Ino, p, now.Sys().(*syscall.Stat_t).Ino)
	}
}

// TestAcquireKernelFiles: a missing file is created with lockctl's kernel
// record and kept after release; an empty one is taken and left empty; one
// holding anything else is refused and untouched.
func TestAcquireKernelFiles(t *testing.T) {
	dir := t.TempDir()
	take := func(name string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		k, err := AcquireKernel(ctx, filepath.Join(dir, name), Options{Kernel: kern})
		if err == nil {
			err = k.Release()
		}
		return err
	}
	if err := take("new.lock"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "new.lock")); err != nil || string(b) != scan.KernelRecord {
		t.Errorf("a kernel lock lockctl made holds %q (%v), want %q, and stays", b, err, scan.KernelRecord)
	}
	if k, _ := KindOf(filepath.Join(dir, "new.lock")); k != KindKernel {
		t.Errorf("KindOf(a kernel lock lockctl made) = %s, want %s", k, KindKernel)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := take("empty.lock"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "empty.lock")); len(b) != 0 {
		t.Errorf("lockctl wrote %q into an empty file it did not make", b)
	}
	if k, _ := KindOf(filepath.Join(dir, "empty.lock")); k != KindDir {
		t.Errorf("KindOf(an empty file of unknown kind) = %s, want %s: it is never taken by a kernel lock unless asked", k, KindDir)
	}
	if err := os.WriteFile(filepath.Join(dir, "pid.lock"), []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := take("pid.lock"); err == nil || !strings.Contains(err.Error(), "holds data lockctl did not write") {
		t.Errorf("AcquireKernel(a pid file) = %v, want it refused", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "pid.lock")); string(b) != "4242\n" {
		t.Errorf("the refused pid file now holds %q", b)
	}
	if err := os.Mkdir(filepath.Join(dir, "d.lock"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := take("d.lock"); err == nil {
		t.Error("AcquireKernel(a directory) succeeded, want it refused")
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.lock"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := take("fifo.lock"); err == nil {
		t.Error("AcquireKernel(a FIFO) succeeded, want it refused")
	}
	if err := os.Symlink("new.lock", filepath.Join(dir, "link.lock")); err != nil {
		t.Fatal(err)
	}
	if err := take("link.lock"); err == nil {
		t.Error("AcquireKernel(a symbolic link) succeeded, want it refused: a link is never followed")
	}
}

package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
)

// Kind is the kind of a lockctl lock.
type Kind string

// The kinds of lock (docs/record-format.md).
const (
	// KindDir is a directory holding its holder's record (Acquire): it
	// outlives its holder, which is why it carries a record to judge.
	KindDir Kind = "dir"
	// KindKernel is a persistent file, never removed, held only by an flock
	// and a whole-file OFD write lock on it (AcquireKernel): the kernel
	// frees it on every kind of death. It excludes flock(1), and the POSIX
	// locks of dpkg, apt and Python's fcntl.lockf, on the same path.
	KindKernel Kind = "flock"
)

// KindOf says which kind of lock path is, when nobody said: a kernel lock
// when the file holds lockctl's scan.KernelRecord, or when it is a known
// producer's kernel-lock file (scan.KnownKernelLock), absent or empty.
// Everything else is a directory lock, today's kind, under which a file
// that stands there is judged as doctor judges it; in particular an empty
// file of unknown kind is never taken by a kernel lock alone, because an
// existence lock (npm's lockfile, SoftFileLock, git) looks the same and its
// live holder may keep no file open. by names who makes it a kernel lock.
func KindOf(path string) (k Kind, by string) {
	abs, dir, name, err := split(path)
	if err != nil {
		return KindDir, ""
	}
	d, err := fsx.OpenDir(dir)
	if err != nil {
		return KindDir, ""
	}
	defer d.Close()
	known := scan.KnownKernelLock(d, abs)
	data, _, _, err := d.ReadFile(name, len(scan.KernelRecord))
	switch {
	case errors.Is(err, fs.ErrNotExist) && known != "":
		return KindKernel, known
	case err != nil:
		return KindDir, ""
	case string(data) == scan.KernelRecord:
		return KindKernel, "lockctl"
	case len(data) == 0 && known != "":
		return KindKernel, known
	}
	return KindDir, ""
}

// KernelLock is a kernel lock this process holds: an open file description
// of the lock file with an flock and an OFD write lock on it. Release it
// exactly once; the kernel releases it anyway when the last descriptor of
// that description closes, in this process or in those it was passed to.
type KernelLock struct {
	// Path is the lock's absolute path.
	Path string
	f    *os.File
}

// File is the lock file, open and locked: pass it to a child (lockctl run
// does) and the child holds the lock with this process.
func (k *KernelLock) File() *os.File { return k.f }

// Release drops this process's hold: it closes the lock file. The file
// itself stays, as a kernel-lock file must.
func (k *KernelLock) Release() error {
	if err := k.f.Close(); err != nil {
		return fmt.Errorf("cannot release %s: %w", k.Path, err)
	}
	return nil
}

// errReplaced is why a kernel lock just taken was let go: the path no
// longer names the file that was locked (it was removed or replaced).
var errReplaced = errors.New("the lock file was replaced while it was being locked")

// AcquireKernel takes the kernel lock at path, waiting until ctx is done:
// it opens the file (creating it, with lockctl's scan.KernelRecord in it,
// if it does not exist), takes an flock and a whole-file OFD write lock
// without waiting, then checks that the path still names the file it
// locked; a lock that is busy is tried again with backoff. It never writes
// into a file it did not create, and refuses one that is neither empty nor
// holding scan.KernelRecord. When ctx ends first it returns *HeldError,
// naming the holder the kernel's lock table shows.
func AcquireKernel(ctx context.Context, path string, opts Options) (*KernelLock, error) {
	abs, dir, name, err := split(path)
	if err != nil {
		return nil, err
	}
	d, err := fsx.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot acquire %s: %w", abs, err)
	}
	defer d.Close()
	kern := kernelOr(opts.Kernel)
	wait := time.Millisecond
	tell := waitTeller(opts.Waiting)
	lastLook := time.Time{}
	for quick := 0; ; {
		kl, st, err := takeKernel(d, abs, name, opts.Hook)
		switch {
		case err == nil:
			return kl, nil
		case errors.Is(err, errReplaced):
			if quick++; quick < 4 {
				continue
			}
		case !errors.Is(err, errBusy):
			return nil, fmt.Errorf("cannot acquire %s: %w", abs, err)
		}
		quick = 0
		if opts.Waiting != nil && st != nil && time.Since(lastLook) >= time.Second {
			// Who holds it costs a look at the kernel's lock table: once a
			// second at most.
			lastLook = time.Now()
			tell(kernelHeld(kern, abs, st, nil).(*HeldError).who())
		}
		select {
		case <-ctx.Done():
			return nil, kernelHeld(kern, abs, st, ctx.Err())
		case <-time.After(wait/2 + rand.N(wait)):
		}
		wait = min(wait*2, 50*time.Millisecond)
	}
}

// takeKernel tries once to take the kernel lock name in d. On errBusy, st
// is the file that is held.
func takeKernel(d fsx.Dir, abs, name string, hook func(Point)) (k *KernelLock, st fs.FileInfo, err error) {
	f, err := d.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = d.OpenFile(name, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			f.Close() // drops whatever was taken on it
		}
	}()
	if st, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is a directory, not a kernel-lock file", abs)
	}
	if created {
		if _, err = f.WriteString(scan.KernelRecord); err == nil {
			err = f.Sync()
		}
	} else {
		err = checkKernelFile(f, abs)
	}
	if err != nil {
		return nil, nil, err
	}
	if hook != nil {
		hook(KernelOpened)
	}
	if err = tryFlock(f); err != nil {
		return nil, st, err
	}
	if err = tryRecordLock(f); err != nil {
		return nil, st, err
	}
	// Locked, but maybe a file that no longer has the name: a lock on it
	// would exclude nobody who opens the path now.
	cur, err := d.Lstat(name)
	dev, ino, _ := fsx.DevIno(st)
	if err != nil || cur.Dev != dev || cur.Ino != ino {
		return nil, nil, errReplaced
	}
	return &KernelLock{Path: abs, f: f}, st, nil
}

// checkKernelFile refuses a file lockctl may not take as a kernel lock:
// one that is neither empty nor holding scan.KernelRecord.
func checkKernelFile(f *os.File, abs string) error {
	b := make([]byte, len(scan.KernelRecord)+1)
	n, err := f.ReadAt(b, 0)
	if n == 0 || string(b[:n]) == scan.KernelRecord {
		return nil
	}
	if err != nil && n == 0 {
		return err
	}
	return fmt.Errorf("%s holds data lockctl did not write, so it is not a kernel-lock file lockctl may take (it takes only an empty file or one it made); 'lockctl doctor %s' judges it", abs, abs)
}

// kernelHeld is the error of a wait on a kernel lock that ended: it names
// the holder the kernel's lock table shows (k.LockHolders), where it can.
func kernelHeld(k Kernel, abs string, st fs.FileInfo, err error) error {
	e := &HeldError{Path: abs, Reason: "a kernel lock on it is held by a process lockctl cannot name from here", Err: err}
	if st == nil {
		return e
	}
	dev, ino, ok := fsx.DevIno(st)
	if !ok {
		return e
	}
	for _, h := range k.LockHolders(filepath.Dir(abs), filepath.Base(abs), dev, ino) {
		if h.Pid > 0 {
			e.Holder = scan.Holder{Pid: int64(h.Pid), PidText: fmt.Sprint(h.Pid), Command: h.Comm}
			e.Reason = fmt.Sprintf("%s held by pid %d (%s)", h.How, h.Pid, h.Comm)
			return e
		}
	}
	return e
}

//go:build unix

package lock

import (
	"errors"
	"github.com/lockctl/lockctl/internal/fsx"
	"os"

	"golang.org/x/sys/unix"
)

// errBusy is why a kernel lock could not be taken: someone holds it.
var errBusy = errors.New("held by another process")

// tryFlock takes an exclusive flock on f without waiting: errBusy if
// another open file description holds one.
func tryFlock(f *os.File) error {
	err := fsx.WithFd(f, func(fd int) error {
		for {
			err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
			if err != unix.EINTR {
				return err
			}
		}
	})
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errBusy
	}
	return err
}

// errNoKernelLocks is never returned where there is flock.
var errNoKernelLocks = errors.New("kernel locks (flock) are not supported on this platform")

// releaseWatch returns a channel that is closed once no process holds an
// exclusive flock on the lock directory name in d any more: lockctl's
// holder keeps one from before it publishes until after it has removed
// the directory, and the kernel drops it when the holder dies, so a waiter
// learns of a release within a moment instead of on its next poll. It is
// nil when nobody holds one now (a lock of another kind, or one just
// released): the caller polls then. One goroutine waits, blocked in flock,
// until the holder lets go.
func releaseWatch(d fsx.Dir, name string) <-chan struct{} {
	f, err := d.OpenFile(name, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	flock := func(how int) error {
		return fsx.WithFd(f, func(fd int) error {
			for {
				if err := unix.Flock(fd, how); err != unix.EINTR {
					return err
				}
			}
		})
	}
	if err := flock(unix.LOCK_SH | unix.LOCK_NB); err == nil || !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close() // no exclusive holder (closing lets go of the probe), or no answer
		return nil
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		defer f.Close()
		_ = flock(unix.LOCK_SH)
	}()
	return ch
}

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

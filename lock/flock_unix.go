//go:build unix

package lock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errBusy is why a kernel lock could not be taken: someone holds it.
var errBusy = errors.New("held by another process")

// control runs fn on f's descriptor.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// tryFlock takes an exclusive flock on f without waiting: errBusy if
// another open file description holds one.
func tryFlock(f *os.File) error {
	err := control(f, func(fd int) error {
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

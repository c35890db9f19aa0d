package lock

import (
	"errors"
	"github.com/lockctl/lockctl/internal/fsx"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// tryRecordLock takes a whole-file OFD write lock on f without waiting:
// errBusy if a POSIX or OFD lock of someone else's covers any of it. dpkg,
// apt and Python's fcntl.lockf take POSIX locks, which never conflict with
// flock on Linux, while OFD and POSIX locks do; and unlike a classic POSIX
// lock, an OFD lock is not dropped when this process closes some other
// descriptor of the file, and is shared with the processes f is passed to.
func tryRecordLock(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	err := fsx.WithFd(f, func(fd int) error {
		for {
			err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
			if err != unix.EINTR {
				return err
			}
		}
	})
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return errBusy
	}
	return err
}

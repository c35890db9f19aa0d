//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"os"

	"github.com/lockctl/lockctl/internal/fsx"
	"golang.org/x/sys/unix"
)

// FileLocked implements verdict.FileLockTest.
func (t FileLocks) FileLocked(dir, name string, dev, ino uint64) (held bool, how string, known bool) {
	d, err := fsx.OpenDir(dir)
	if err != nil {
		return false, fmt.Sprintf("the file could not be asked about (%v)", err), false
	}
	defer d.Close()
	// Looked at before it is opened: a FIFO or a device is never opened.
	st, err := d.Lstat(name)
	switch {
	case err != nil:
		return false, fmt.Sprintf("the file could not be asked about (%v)", err), false
	case !st.Mode.IsRegular() && !st.Mode.IsDir():
		return false, "the entry is no longer a file or directory", false
	case st.Dev != dev || st.Ino != ino:
		return false, "the entry is no longer the file judged", false
	}
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return false, fmt.Sprintf("the file could not be opened to ask (%v)", err), false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Sprintf("the file could not be asked about (%v)", err), false
	}
	if gotDev, gotIno, ok := fsx.DevIno(fi); !ok || gotDev != dev || gotIno != ino {
		return false, "the entry is no longer the file judged", false
	}
	var lk unix.Flock_t
	err = fsx.WithFd(f, func(fd int) error {
		for {
			lk = unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
			err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk)
			if err != unix.EINTR {
				return err
			}
		}
	})
	if err != nil {
		return false, fmt.Sprintf("the kernel could not be asked for its POSIX and OFD locks (F_OFD_GETLK: %v)", err), false
	}
	if lk.Type != unix.F_UNLCK {
		return true, getlkText(lk), true
	}
	if !t.Take {
		return false, "the kernel shows no POSIX or OFD lock on it (F_OFD_GETLK), but a flock cannot be seen without taking it: judge it from the host, or with --fix (which may take it for an instant)", false
	}
	err = fsx.WithFd(f, func(fd int) error {
		for {
			err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
			if err != unix.EINTR {
				return err
			}
		}
	})
	switch {
	case errors.Is(err, unix.EWOULDBLOCK):
		return true, "a flock is held on it (the kernel refused this process's non-blocking flock)", true
	case err != nil:
		return false, fmt.Sprintf("its flock could not be tried (%v)", err), false
	}
	// Taken: no other open file description holds a flock, nor (above) a
	// POSIX or OFD lock. Released with the descriptor, at once.
	return false, "no process holds a flock, POSIX or OFD lock on it (this process took its flock and released it at once)", true
}

// getlkText says in words the lock F_OFD_GETLK found.
func getlkText(lk unix.Flock_t) string {
	mode := "WRITE"
	if lk.Type == unix.F_RDLCK {
		mode = "READ"
	}
	switch {
	case lk.Pid == -1:
		return fmt.Sprintf("an OFD lock (%s) is held on it (F_OFD_GETLK)", mode)
	case lk.Pid > 0:
		return fmt.Sprintf("a POSIX lock (%s) is held on it by pid %d (F_OFD_GETLK)", mode, lk.Pid)
	}
	return fmt.Sprintf("a POSIX lock (%s) is held on it by a process outside this pid namespace (F_OFD_GETLK)", mode)
}

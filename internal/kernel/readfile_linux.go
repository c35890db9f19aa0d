package kernel

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// readFile reads a small kernel file (under /proc or /sys, or
// /etc/machine-id) whole. os.ReadFile would do the same in three times the
// system calls: it registers every file with the poller, which /proc's
// files refuse, then undoes that, and stats the file for a size that
// /proc reports as zero. Errors are os.ReadFile's: a *fs.PathError
// wrapping the errno.
func readFile(path string) ([]byte, error) {
	fd, err := retryFd(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 1024)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

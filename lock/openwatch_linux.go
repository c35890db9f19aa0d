//go:build linux

package lock

import (
	"errors"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openWatch counts the opens of the lock directory this process holds,
// by inotify's IN_OPEN on its inode, from the moment it is flocked: a
// release that sees no open but its own needs no look at every process's
// open files (lastOn), since a process that has the directory open and
// may flock it next must have opened it, by its path or any other, and
// every such open is an event here. An inherited or passed descriptor
// opens nothing, but shares the flock, which the fresh flock then meets.
type openWatch struct{ fd int }

// newOpenWatch watches the directory f, or returns nil where inotify
// cannot be had (no instance left): a release then looks at every
// process's open files, as without it.
func newOpenWatch(f *os.File) *openWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	if _, err := unix.InotifyAddWatch(fd, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.IN_OPEN|unix.IN_ONLYDIR); err != nil {
		unix.Close(fd)
		return nil
	}
	return &openWatch{fd: fd}
}

// opens drains the events so far and returns how many opens of the
// directory itself they count; ok is false where that cannot be told (the
// queue overflowed, a read failed, or there is no watch).
func (w *openWatch) opens() (n int, ok bool) {
	if w == nil {
		return 0, false
	}
	buf := make([]byte, 4096)
	for {
		m, err := unix.Read(w.fd, buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return n, true
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil || m <= 0:
			return n, false
		}
		for off := 0; off+unix.SizeofInotifyEvent <= m; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				return n, false
			}
			if ev.Mask&unix.IN_OPEN != 0 && ev.Len == 0 {
				n++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

func (w *openWatch) close() {
	if w != nil {
		unix.Close(w.fd)
	}
}

package lock

import (
	"os"

	"golang.org/x/sys/unix"
)

// watch fires once the lock directory it was made for is removed or moved
// away (a release, or a break), so that a waiter tries again at once rather
// than on its next poll. It is only a wake-up: the waiter judges again
// whatever woke it, and still polls, for what inotify does not tell (a
// holder that died and left its lock). Close it when the wait ends: its
// goroutine and descriptor go with it.
type watch struct {
	f  *os.File
	ch chan struct{}
}

// releaseWatch watches the lock directory at path, or returns nil where
// inotify cannot be had (no instance left, the path gone already): the
// caller then polls only.
func releaseWatch(path string) *watch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW); err != nil {
		unix.Close(fd)
		return nil
	}
	w := &watch{f: os.NewFile(uintptr(fd), "inotify:"+path), ch: make(chan struct{})}
	go func() {
		defer close(w.ch)
		buf := make([]byte, 4096)
		_, _ = w.f.Read(buf) // an event, or Close (the poller wakes the read)
	}()
	return w
}

// fired is closed once the watched directory went (or the watch was
// closed); nil for no watch, which never fires.
func (w *watch) fired() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.ch
}

// Close ends the watch.
func (w *watch) Close() {
	if w != nil {
		w.f.Close()
	}
}

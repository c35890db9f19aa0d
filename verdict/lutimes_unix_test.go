//go:build unix

package verdict

import (
	"time"

	"golang.org/x/sys/unix"
)

// lchtimes sets the mtime of path itself, a symbolic link not followed.
func lchtimes(path string, at time.Time) error {
	ts := unix.NsecToTimespec(at.UnixNano())
	return unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}

//go:build unix

package cli

import "golang.org/x/sys/unix"

// inForeground reports whether lockctl's process group is the foreground
// group of the terminal on its stdin, stdout or stderr: then the terminal
// sends its Ctrl-C to CMD as well as to lockctl.
func inForeground() bool {
	pg := unix.Getpgrp()
	for _, fd := range []int{0, 1, 2} {
		if fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil {
			return fg == pg
		}
	}
	return false
}

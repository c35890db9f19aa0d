//go:build linux

package kernel

import (
	"os"

	"golang.org/x/sys/unix"
)

// WaitMarkName is the name of the memfd by which a waiting lockctl says
// what it waits on: /proc/<pid>/fd/<n> of such a process reads
// "/memfd:lockctl-wait (deleted)", and the file holds the lock's absolute
// path and a newline. lockctl why reads it there: the wait is said by the
// waiter itself, never guessed from its command line.
const WaitMarkName = "lockctl-wait"

// MarkWait makes the mark of a wait on path, and returns what removes it
// (closes the memfd). Where a memfd cannot be made, there is no mark, and
// why says the process's state as it is.
func MarkWait(path string) (unmark func()) {
	fd, err := unix.MemfdCreate(WaitMarkName, unix.MFD_CLOEXEC)
	if err != nil {
		return func() {}
	}
	f := os.NewFile(uintptr(fd), WaitMarkName)
	if _, err := f.WriteString(path + "\n"); err != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() }
}

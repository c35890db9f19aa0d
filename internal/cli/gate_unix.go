//go:build unix

package cli

import (
	"fmt"
	"github.com/lockctl/lockctl/internal/fsx"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// gate is lockctl run's end of the channel to CMD's waiting process: a
// Unix socket, so that opening the gate can hand CMD the lock's open file
// (SCM_RIGHTS), and CMD, and what it forks, hold the kernel lock while they
// run, as flock(1) passes its lock to its command.
type gate struct{ f *os.File }

// newGate returns the gate and the end that CMD's process gets as fd 3.
func newGate() (g gate, child *os.File, err error) {
	// Not every platform has SOCK_CLOEXEC: hold ForkLock, as os.Pipe does,
	// so that no fork in between inherits the ends.
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return gate{}, nil, fmt.Errorf("cannot make the gate: %w", err)
	}
	return gate{os.NewFile(uintptr(fds[0]), "gate")}, os.NewFile(uintptr(fds[1]), "gate"), nil
}

// open lets CMD run, handing it lockFile (nil: nothing to hand).
func (g gate) open(lockFile *os.File) error {
	var oob []byte
	if lockFile != nil {
		oob = unix.UnixRights(int(lockFile.Fd()))
	}
	return fsx.WithFd(g.f, func(fd int) error { return unix.Sendmsg(fd, []byte{'g'}, oob, nil, 0) })
}

func (g gate) close() { g.f.Close() }

// waitGate runs in CMD's process: it waits on fd 3 until lockctl run opens
// the gate, and puts the lock file it was handed at fd 3, in place of the
// gate, for CMD to inherit. ok is false if lockctl gave up or died first.
func waitGate() (ok bool) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(3, buf, oob, 0)
	if err != nil || n != 1 || buf[0] != 'g' {
		return false
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err == nil && len(msgs) == 1 {
		if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
			// dup2 closes the gate and leaves fd 3 open across exec.
			if err := unix.Dup2(fds[0], 3); err == nil {
				unix.Close(fds[0])
				return true
			}
		}
	}
	unix.Close(3)
	return true
}

//go:build linux && amd64

package why

import "golang.org/x/sys/unix"

// archSyscallNames are the calls only some architectures have.
var archSyscallNames = map[int]string{
	unix.SYS_POLL: "poll", unix.SYS_SELECT: "select", unix.SYS_EPOLL_WAIT: "epoll_wait",
	unix.SYS_ACCEPT: "accept", unix.SYS_PAUSE: "pause",
}

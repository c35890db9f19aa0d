//go:build linux

package why

import "golang.org/x/sys/unix"

// syscallNames names the system calls a blocked task is commonly in.
var syscallNames = map[int]string{
	unix.SYS_FLOCK: "flock", unix.SYS_FCNTL: "fcntl",
	unix.SYS_WAIT4: "wait4", unix.SYS_WAITID: "waitid",
	unix.SYS_NANOSLEEP: "nanosleep", unix.SYS_CLOCK_NANOSLEEP: "clock_nanosleep",
	unix.SYS_READ: "read", unix.SYS_WRITE: "write",
	unix.SYS_PPOLL: "ppoll", unix.SYS_PSELECT6: "pselect6", unix.SYS_EPOLL_PWAIT: "epoll_pwait",
	unix.SYS_FUTEX: "futex", unix.SYS_CONNECT: "connect", unix.SYS_ACCEPT4: "accept4",
	unix.SYS_RECVFROM: "recvfrom", unix.SYS_RECVMSG: "recvmsg",
	unix.SYS_RT_SIGSUSPEND: "rt_sigsuspend", unix.SYS_RT_SIGTIMEDWAIT: "rt_sigtimedwait",
}

// waitKinds says in words what a task blocked in a system call waits for.
var waitKinds = map[string]string{
	"nanosleep": "sleeping", "clock_nanosleep": "sleeping",
	"ppoll": "waiting for descriptors", "pselect6": "waiting for descriptors", "epoll_pwait": "waiting for descriptors",
	"poll": "waiting for descriptors", "select": "waiting for descriptors", "epoll_wait": "waiting for descriptors",
	"futex":   "waiting on a futex (a thread's lock, or a runtime's idle thread)",
	"connect": "waiting on the network", "accept4": "waiting on the network", "accept": "waiting on the network",
	"recvfrom": "waiting on the network", "recvmsg": "waiting on the network",
	"rt_sigsuspend": "waiting for a signal", "rt_sigtimedwait": "waiting for a signal", "pause": "waiting for a signal",
}

func syscallName(nr int) string {
	if n, ok := syscallNames[nr]; ok {
		return n
	}
	return archSyscallNames[nr]
}

//go:build linux

package testutil

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// forker is the OS thread that StartTied forks from. The kernel sends a
// child its parent-death signal when the thread that forked it exits, not
// the process; Go may end a thread whenever a goroutine that locked it
// returns, so the forks are all made from one goroutine that locks its
// thread and never returns: the signal comes when this process dies, and
// only then.
var forker struct {
	once sync.Once
	reqs chan forkReq
}

type forkReq struct {
	cmd *exec.Cmd
	err chan error
}

// StartTied starts cmd (cmd.Start) so that the kernel SIGKILLs it when this
// process dies, however it dies: a test binary's -test.timeout panic, a
// t.Fatal past which no cleanup runs, or a SIGKILL. Only cmd itself is
// killed so: a cmd that forks children of its own must take them with it,
// as `unshare --pid --fork --kill-child` does (its namespace's init is
// killed with it, and with the init every process in the namespace).
func StartTied(cmd *exec.Cmd) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkReq)
		go func() {
			runtime.LockOSThread() // never unlocked: see forker
			for r := range forker.reqs {
				r.err <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	r := forkReq{cmd: cmd, err: make(chan error, 1)}
	forker.reqs <- r
	return <-r.err
}

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
	start func() error
	err   chan error
}

// StartTied starts cmd (cmd.Start) so that the kernel SIGKILLs it when this
// process dies, however it dies: a test binary's -test.timeout panic, a
// t.Fatal past which no cleanup runs, or a SIGKILL. Only cmd itself is
// killed so: a cmd that forks children of its own must take them with it,
// as `unshare --pid --fork --kill-child` does (its namespace's init is
// killed with it, and with the init every process in the namespace).
func StartTied(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return OnTiedThread(cmd.Start)
}

// OnTiedThread runs start on the thread StartTied forks from, and returns
// its error: a process start makes there with its parent-death signal set
// (SysProcAttr.Pdeathsig) is killed when this process dies, and only then.
// It is for callers that start processes without exec.Cmd
// (os.StartProcess).
func OnTiedThread(start func() error) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkReq)
		go func() {
			runtime.LockOSThread() // never unlocked: see forker
			for r := range forker.reqs {
				r.err <- r.start()
			}
		}()
	})
	r := forkReq{start: start, err: make(chan error, 1)}
	forker.reqs <- r
	return <-r.err
}

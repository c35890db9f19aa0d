//go:build linux

package testutil

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The holders below are children started with os/exec and reaped with
// Cmd.Wait. A test that makes itself a child subreaper and reaps every
// child on its own (lcReaper in package main) would steal their exit
// statuses: it must start its processes through its own reaper instead.

// Sleeper starts "sleep 3600", a live holder for as long as the test needs
// one, and returns it: a test that needs only a pid takes c.Process.Pid, a
// test that kills the holder midway has the Cmd to kill and reap it with.
// Cleanup kills and reaps it, unless the test has reaped it already.
func Sleeper(t T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "3600")
	if err := StartTied(c); err != nil { // it dies with the test binary, however that ends
		t.Fatalf("cannot start a live holder: %v", err)
	}
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	return c
}

// Gone returns the pid of a process that has exited and been reaped, and
// that no process has taken since: /proc has no entry for it and
// kill(pid, 0) says ESRCH. A freed pid can be handed out again at once on a
// busy machine, so it tries up to 20 processes before it fails the test.
// Nothing stops the kernel from handing the pid out later in the test.
func Gone(t T) int {
	t.Helper()
	for range 20 {
		c := exec.Command("true")
		if err := c.Run(); err != nil {
			t.Fatalf("cannot run a holder: %v", err)
		}
		pid := c.Process.Pid
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		if errors.Is(err, fs.ErrNotExist) && syscall.Kill(pid, 0) == syscall.ESRCH {
			return pid
		}
	}
	t.Fatalf("every exited pid was taken again at once")
	return 0
}

// Zombie starts a child that exits at once and is not waited for, and
// returns it once /proc shows it in state Z (failing the test if it does
// not within 10s): a pid that names a process which will never run again,
// yet which kill(pid, 0) still finds. Cleanup reaps it, unless the test
// has (with c.Wait) already.
func Zombie(t T) *exec.Cmd {
	t.Helper()
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatalf("cannot start a holder: %v", err)
	}
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Wait()
		}
	})
	pid := c.Process.Pid
	WaitFor(t, 10*time.Second, "pid "+strconv.Itoa(pid)+" to be a zombie", func() bool { return ProcState(pid) == 'Z' })
	return c
}

// ProcState is the state field of /proc/<pid>/stat ('R', 'S', 'Z', ...),
// or 0 if pid has no entry there. The field is read after the last ')':
// the command name before it may itself hold spaces and parentheses.
func ProcState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// HiddenFromRoot lists the processes whose open files or root directory
// this process may not follow (statx of /proc/<pid>/fd/<n>, or of
// /proc/<pid>/root, fails with EACCES or EPERM), found the first time it is
// asked, before the caller starts processes of its own: on some machines a
// sandbox's pid 1 hides them even from root. No look at every process is
// complete while such a process runs, so lockctl rightly sweeps nothing on
// that strength there; a test of what happens after a complete look takes
// these processes, which no test started, not to hold its temporary files.
func HiddenFromRoot() map[int]bool { return hiddenFromRoot() }

// OnlyHidden reports whether every pid of unseen is HiddenFromRoot.
func OnlyHidden(unseen []int) bool {
	for _, p := range unseen {
		if !hiddenFromRoot()[p] {
			return false
		}
	}
	return true
}

var hiddenFromRoot = sync.OnceValue(func() map[int]bool {
	hidden := map[int]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, "/proc/"+e.Name()+"/root", 0, unix.STATX_INO, &st); err == unix.EACCES || err == unix.EPERM {
			hidden[pid] = true
			continue
		}
		fds, _ := os.ReadDir("/proc/" + e.Name() + "/fd")
		for _, fd := range fds {
			var st unix.Statx_t
			err := unix.Statx(unix.AT_FDCWD, "/proc/"+e.Name()+"/fd/"+fd.Name(), 0, unix.STATX_INO, &st)
			if err == unix.EACCES || err == unix.EPERM {
				hidden[pid] = true
				break
			}
		}
	}
	return hidden
})

// StartTicks is field 22 of /proc/<pid>/stat, the process's start time in
// clock ticks since boot, or 0 if it cannot be read.
func StartTicks(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// FreePid returns a pid that no process on the host has, and that the
// kernel handed out a while ago, so that it will not hand it out again
// soon: a pid a test gives to a container's process, which must be absent
// on the host for the test to mean anything. except are pids not to take.
func FreePid(t T, except ...int) int {
	t.Helper()
	last, _ := strconv.Atoi(strings.TrimSpace(readString("/proc/sys/kernel/ns_last_pid")))
	pidMax, _ := strconv.Atoi(strings.TrimSpace(readString("/proc/sys/kernel/pid_max")))
	if pidMax <= 1000 {
		pidMax = 32768
	}
	taken := map[int]bool{}
	for _, p := range except {
		taken[p] = true
	}
	// The kernel hands out last+1, last+2, ... up to pid_max, then wraps
	// round to 300: the numbers just behind last are the last it will
	// reach. Walk back from 500 behind it, wrapping the same way.
	const low = 300
	span := pidMax - low
	for k := 500; k < span; k++ {
		n := low + ((last-low-k)%span+span)%span
		if _, err := os.Stat("/proc/" + strconv.Itoa(n)); errors.Is(err, fs.ErrNotExist) && !taken[n] {
			return n
		}
	}
	t.Fatalf("no free pid on this host (last %d, pid_max %d)", last, pidMax)
	return 0
}

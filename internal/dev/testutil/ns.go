//go:build linux

package testutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Container is a process in a pid namespace of its own: a container, as the
// host sees it.
type Container struct {
	// Pid is the process's pid on the host, Inner its pid inside, and NS
	// its namespace's link ("pid:[<inode>]").
	Pid   int
	Inner int
	NS    string
	// Init is the host pid of the namespace's init; cmd is unshare.
	Init int
	cmd  *exec.Cmd
	t    T
}

// StartContainer runs payload, a shell command, in a new pid namespace with
// its own /proc (unshare --pid --fork --kill-child --mount-proc), as pid
// inner there (inner > 2: the namespace's init, a shell, is pid 1, and
// the next pid is forced through /proc/sys/kernel/ns_last_pid). The payload
// runs in the background of that shell, and must keep running for as long
// as the test needs it. Cleanup (or Stop) kills the namespace's init, which
// takes every process of the namespace with it, and reaps it. It skips the
// test where that cannot be done (not root, no unshare).
func StartContainer(t T, inner int, payload string) *Container {
	t.Helper()
	if os.Geteuid() != 0 {
		skip(t, "a pid namespace needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		skip(t, "no unshare (util-linux)")
	}
	// ns_last_pid of the namespace's own /proc sets the next pid there.
	script := fmt.Sprintf(`echo %d > /proc/sys/kernel/ns_last_pid && { %s & } && echo ready $! && wait`, inner-1, payload)
	cmd := exec.Command(unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("%v", err)
	}
	// Tied: unshare dies with the test binary however it ends, and
	// --kill-child takes the namespace, and its /proc mount, along.
	if err := StartTied(cmd); err != nil {
		skip(t, fmt.Sprintf("cannot start unshare: %v", err))
	}
	c := &Container{cmd: cmd, Inner: inner, t: t}
	t.Cleanup(c.Stop)
	line, err := ReadLine(t, ReadyWait, fmt.Sprintf("the container (unshare, pid %d) to say ready", cmd.Process.Pid), bufio.NewReader(out))
	if got := strings.TrimSpace(line); err != nil || got != "ready "+strconv.Itoa(inner) {
		t.Fatalf("the container did not start its payload as pid %d: %q, %v", inner, line, err)
	}
	WaitFor(t, 10*time.Second, "the container's init", func() bool {
		kids := strings.Fields(readString(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid)))
		if len(kids) == 1 {
			c.Init, _ = strconv.Atoi(kids[0])
		}
		return c.Init > 0
	})
	WaitFor(t, 10*time.Second, "the container's payload", func() bool {
		for _, k := range strings.Fields(readString(fmt.Sprintf("/proc/%d/task/%d/children", c.Init, c.Init))) {
			if ns := NSpid(k); len(ns) > 1 && ns[len(ns)-1] == strconv.Itoa(inner) {
				c.Pid, _ = strconv.Atoi(k)
			}
		}
		return c.Pid > 0
	})
	c.NS, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", c.Pid))
	if err != nil {
		t.Fatalf("%v", err)
	}
	// Hold the namespace for the rest of the test: once it has ended its
	// inode number would be handed to the next namespace made anywhere on
	// the machine (another test's), which would then read as this one. A
	// namespace held so, with no process in it, has ended all the same:
	// once its init has exited nothing can enter it.
	pin, err := os.Open(fmt.Sprintf("/proc/%d/ns/pid", c.Pid))
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { pin.Close() })
	return c
}

// Stop kills the namespace's init, which ends every process in it, and
// waits until unshare has reaped it: then the namespace has ended. It
// fails the test if that takes longer than KillWait. Call it from the
// goroutine that runs the test.
func (c *Container) Stop() {
	if c.cmd.ProcessState != nil {
		return
	}
	if c.Init > 0 {
		_ = syscall.Kill(c.Init, syscall.SIGKILL)
	} else {
		_ = c.cmd.Process.Kill()
	}
	waited := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(waited) }()
	if _, ok := Within(waited, KillWait); !ok {
		c.t.Fatalf("the container's unshare (pid %d) was not reaped within %s of its init's SIGKILL", c.cmd.Process.Pid, KillWait)
	}
}

// NSpid is the NSpid line of /proc/<pid>/status: the process's pid in each
// pid namespace from the host's down to its own.
func NSpid(pid string) []string {
	for _, l := range strings.Split(readString("/proc/"+pid+"/status"), "\n") {
		if v, ok := strings.CutPrefix(l, "NSpid:"); ok {
			return strings.Fields(v)
		}
	}
	return nil
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// skip skips the test, where t can (a *testing.T or B); elsewhere fails it.
func skip(t T, why string) {
	t.Helper()
	if s, ok := t.(interface{ Skip(...any) }); ok {
		s.Skip(why)
	}
	t.Fatalf("%s", why)
}

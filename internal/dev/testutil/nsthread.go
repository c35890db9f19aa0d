//go:build linux

package testutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ContainerThread is a live thread, not its process's leader, of a
// container's process, whose id inside the container is a number that no
// process or thread of the host has: a pid file holding that id names, from
// the host, nothing but that thread.
type ContainerThread struct {
	// Process is the thread's process (its leader), a container's process.
	Process *Container
	// Tid is the thread's id on the host, Inner the one it has inside.
	Tid   int
	Inner int
	stop  string
}

// threadScript is the container's payload: it sets the namespace's
// ns_last_pid to argv[2], so that the thread it starts next takes the one
// after, and that thread runs until the file argv[1] exists. The process
// runs on after the thread has ended.
const threadScript = `import os, sys, threading, time
def run():
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.02)
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(sys.argv[2])
th = threading.Thread(target=run)
th.start()
th.join()
time.sleep(3600)
`

// StartContainerThread starts a container (StartContainer) whose process,
// python3, starts a thread whose id inside the container is forced, through
// ns_last_pid, to a number that this host's /proc shows no process or
// thread by, before the thread is made and after. It skips the test where
// that cannot be done (not root, no unshare, no python3) or where the host
// takes the number meanwhile. Cleanup ends the container.
func StartContainerThread(t T) *ContainerThread {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		skip(t, "no python3: the container's thread is started by a python3 program")
	}
	inner := FreePid(t)
	leader := FreePid(t, inner)
	dir, err := os.MkdirTemp("", "lockctl-thread-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ct := &ContainerThread{Inner: inner, stop: filepath.Join(dir, "stop")}
	payload := fmt.Sprintf("exec %s -c '%s' %s %d", python, threadScript, ct.stop, inner-1)
	ct.Process = StartContainer(t, leader, payload)
	task := fmt.Sprintf("/proc/%d/task", ct.Process.Pid)
	WaitFor(t, 10*time.Second, "the container's thread", func() bool {
		ents, _ := os.ReadDir(task)
		for _, e := range ents {
			if e.Name() == strconv.Itoa(ct.Process.Pid) {
				continue
			}
			ns := NSpid(filepath.Join(strconv.Itoa(ct.Process.Pid), "task", e.Name()))
			if len(ns) > 1 && ns[len(ns)-1] == strconv.Itoa(inner) {
				ct.Tid, _ = strconv.Atoi(e.Name())
			}
		}
		return ct.Tid > 0
	})
	if ct.Tid == inner {
		skip(t, fmt.Sprintf("the thread's host id is its container id too (%d): no namesake to find", inner))
	}
	// /proc/<n> answers for a thread id as well as a process's, though
	// only leaders are listed.
	if _, err := os.Stat("/proc/" + strconv.Itoa(inner)); !errors.Is(err, fs.ErrNotExist) {
		skip(t, fmt.Sprintf("a host process or thread took %d meanwhile (%v)", inner, err))
	}
	return ct
}

// Stop ends the thread (its process runs on) and waits until the host's
// /proc no longer shows it.
func (ct *ContainerThread) Stop(t T) {
	t.Helper()
	if err := os.WriteFile(ct.stop, nil, 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	WaitFor(t, 10*time.Second, "the container's thread to end", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", ct.Process.Pid, ct.Tid))
		return errors.Is(err, fs.ErrNotExist)
	})
	if st := readString(fmt.Sprintf("/proc/%d/status", ct.Process.Pid)); !strings.Contains(st, "Threads:\t1\n") {
		t.Fatalf("the container's process has other threads than its leader: %q", st)
	}
}

//go:build linux

// What cli asks of one process by its pid to name a lock's holder: its
// command, its program and its parent (/proc/<pid>/comm, exe and stat).

package kernel

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Command is pid's command name as /proc/<pid>/comm holds it (the kernel's
// name for its program, cut to 15 bytes), or "" when it cannot be read. A
// pid that exits or is reused between two questions is answered for
// whichever process has it when asked.
func Command(pid int) string {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil || len(b) < 2 {
		return ""
	}
	return string(b[:len(b)-1])
}

// Program is the name of pid's executable file (the last element of
// /proc/<pid>/exe, without the kernel's " (deleted)"), or Command(pid)
// when that link cannot be read (another user's process, a kernel
// thread). It is "" when neither can be read.
func Program(pid int) string {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return Command(pid)
	}
	return filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
}

// Parent is the pid of pid's parent, from /proc/<pid>/stat (parsed by
// ParseStat), or 0 when it cannot be read.
func Parent(pid int) int {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return statParent(b)
}

// Leader is the process (thread-group leader) that the task id tid belongs
// to, from the Tgid line of /proc/<tid>/status (a thread's id is found
// there too, though /proc does not list it), or 0 when it cannot be read.
// It is tid itself for a process.
func Leader(tid int) int {
	b, err := readFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// EndlessPid reports whether pid is a process that never exits while the
// machine runs: pid 1 of the initial pid namespace. Pid 1 of any other pid
// namespace (a container's entrypoint shell) is an ordinary process: when
// it exits its namespace ends. Where this process's namespace cannot be
// read, pid 1 is taken to be the machine's.
func EndlessPid(pid int) bool {
	if pid != 1 {
		return false
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	return err != nil || ns == initialPidNS
}

// capSysPtrace is CAP_SYS_PTRACE's bit in a capability set.
const capSysPtrace = 19

// hasCap reports whether this process has capability bit in its effective
// set, by the CapEff line of /proc/self/status; false where it cannot be
// read.
func hasCap(bit uint) bool {
	b, err := readFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && n&(1<<bit) != 0
		}
	}
	return false
}

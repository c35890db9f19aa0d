//go:build linux

// Package leak finds what a test run left behind on the machine: processes
// it started that still run, mounts it added, and files it left in
// /dev/shm or in the shared temporary folders outside its own TMPDIR.
//
// A run marks everything it starts with an environment variable (Var)
// holding the run's id: every child inherits it, and /proc/<pid>/environ
// reads it back, so processes of the run are told apart from the machine's
// other processes without a name. A process that was given an environment
// without the marker is not found: tests keep os.Environ() and change
// entries (testutil.Env), they do not start from nothing.
package leak

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Var is the environment variable that marks a run's processes.
const Var = "LOCKCTL_TEST_RUN"

// Proc is a process of the run that is still running.
type Proc struct {
	Pid  int
	Comm string
	Args string
}

func (p Proc) String() string { return fmt.Sprintf("pid %d (%s): %s", p.Pid, p.Comm, p.Args) }

// Marked lists the running processes whose environment carries Var=run,
// leaving out this process and its ancestors (the checker itself, and go
// run). Zombies are dead (this machine's pid 1 may never reap them) and
// are not listed; a process whose environment cannot be read is not the
// run's, as far as anyone can tell.
func Marked(run string) []Proc {
	want := []byte(Var + "=" + run + "\x00")
	skip := ancestors()
	ents, _ := os.ReadDir("/proc")
	var ps []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || skip[pid] {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		comm, state := stat(pid)
		if state == 'Z' || state == 'X' || state == 0 {
			continue
		}
		args, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		ps = append(ps, Proc{Pid: pid, Comm: comm, Args: strings.TrimSpace(string(bytes.ReplaceAll(args, []byte{0}, []byte{' '})))})
	}
	return ps
}

// Kill sends SIGKILL to every process Marked(run) lists, a few rounds, so
// that what a dying process forked is found too, and returns what it
// killed.
func Kill(run string) []Proc {
	var all []Proc
	for range 5 {
		ps := Marked(run)
		if len(ps) == 0 {
			break
		}
		for _, p := range ps {
			_ = syscall.Kill(p.Pid, syscall.SIGKILL)
		}
		all = append(all, ps...)
	}
	return all
}

// ancestors is this process and every process above it.
func ancestors() map[int]bool {
	m := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !m[pid]; {
		m[pid] = true
		pid = ppid(pid)
	}
	return m
}

// stat returns pid's command name and state from /proc/<pid>/stat (0 when
// it cannot be read).
func stat(pid int) (comm string, state byte) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0
	}
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 >= len(b) {
		return "", 0
	}
	return string(b[open+1 : end]), b[end+2]
}

func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// State is what Snapshot saw: the mount table (mount point and source of
// each line of /proc/self/mountinfo) and the entries of the watched
// folders.
type State struct {
	Mounts []string
	Files  []string
}

// Watched are the folders whose new entries a run must not leave: shared
// memory, the shared temporary folder (the run's own TMPDIR is inside it
// and left out), and the places programs keep a user's settings.
func Watched() []string {
	home, _ := os.UserHomeDir()
	ws := []string{"/dev/shm", "/tmp", "/var/tmp"}
	if home != "" && home != "/" {
		ws = append(ws, home, home+"/.config", home+"/.cache", home+"/.local/share")
	}
	return ws
}

// Snapshot reads the state a run is compared against.
func Snapshot() State {
	var s State
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			// Fields: id parent major:minor root mountpoint options ... - fstype source superopts
			f := strings.Fields(line)
			if len(f) < 5 {
				continue
			}
			sep := strings.Index(line, " - ")
			tail := ""
			if sep >= 0 {
				t := strings.Fields(line[sep+3:])
				if len(t) >= 2 {
					tail = t[0] + " " + t[1]
				}
			}
			s.Mounts = append(s.Mounts, f[4]+" ("+tail+")")
		}
	}
	for _, w := range Watched() {
		ents, err := os.ReadDir(w)
		if err != nil {
			continue
		}
		for _, e := range ents {
			s.Files = append(s.Files, w+"/"+e.Name())
		}
	}
	sort.Strings(s.Mounts)
	sort.Strings(s.Files)
	return s
}

// Added returns what after has that before had not: mounts, and files
// other than those under keep (the run's TMPDIR, the Go caches).
func Added(before, after State, keep ...string) (mounts, files []string) {
	mounts = added(before.Mounts, after.Mounts)
	for _, f := range added(before.Files, after.Files) {
		kept := false
		for _, k := range keep {
			if k != "" && (f == k || strings.HasPrefix(k, f+"/") || strings.HasPrefix(f, k+"/")) {
				kept = true
			}
		}
		if !kept {
			files = append(files, f)
		}
	}
	return mounts, files
}

// added lists the entries of b that a lacks, counting repeats (a mount
// point mounted twice).
func added(a, b []string) []string {
	n := map[string]int{}
	for _, s := range a {
		n[s]++
	}
	var out []string
	for _, s := range b {
		if n[s] > 0 {
			n[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

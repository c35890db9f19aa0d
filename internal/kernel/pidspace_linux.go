//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// wholeView says why this process cannot see every process on the machine,
// or nil when it can: it is in the initial pid namespace, the /proc mounted
// here is of that namespace, and it hides no process. Only such a reader
// can prove that a pid recorded without its namespace is in use nowhere,
// or that a pid namespace has ended. None of the three changes under a
// running process, so it is asked once.
var wholeView = sync.OnceValue(func() error {
	own, err := os.Readlink("/proc/self/ns/pid")
	switch {
	case err != nil:
		return fmt.Errorf("this process's pid namespace cannot be read (%v)", errors.Unwrap(err))
	case own != initialPidNS:
		return fmt.Errorf("this lockctl runs in a child pid namespace (%s), which cannot see the processes of the host or of other containers: judge it from the host", own)
	}
	if err := procOurs(); err != nil {
		return err
	}
	if procHidesSome() {
		return errors.New("the /proc mounted here hides processes (hidepid or subset), so not every process can be seen: judge it where /proc shows them all")
	}
	return nil
})

// procPids lists the processes in /proc.
func procPids() ([]string, error) {
	f, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("cannot list /proc: %w", errors.Unwrap(err))
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("cannot list /proc: %w", errors.Unwrap(err))
	}
	pids := names[:0]
	for _, n := range names {
		if n != "" && n[0] >= '1' && n[0] <= '9' && isDigits(n) {
			pids = append(pids, n)
		}
	}
	return pids, nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// gone reports whether err says a /proc entry vanished: its process exited
// while it was being read.
func gone(err error) bool { return os.IsNotExist(err) || errors.Is(err, unix.ESRCH) }

// Namesakes implements PidSpace from the NSpid line of every process's
// status, and of every thread's (/proc/<pid>/task/<tid>/status), read
// afresh on every call: a pid file may hold a thread's id, which names
// that thread's process to kill(2) as well as its leader's pid does. A
// process in the initial namespace (by its ns/pid link, the cheaper read,
// or its status's NSpid) has no other pid, nor have its threads, and is
// passed over; a process that has exited (a zombie with no other thread),
// or a thread that has, holds nothing and is left out.
func (KernelProbe) Namesakes() (map[int][]verdict.Namesake, error) {
	if err := wholeView(); err != nil {
		return nil, err
	}
	f0, counted := forks()
	idx, err := namesakes()
	if err == nil && counted {
		looks.keepNamesakes(f0, idx)
	}
	return idx, err
}

// NamesakesOf implements verdict.PidNamesakes: Namesakes()[inner], from the
// last look while no process has been created since it began (lookCache),
// each of its namesakes checked to be still running; from a new look
// otherwise.
func (KernelProbe) NamesakesOf(inner int) ([]verdict.Namesake, error) {
	if err := wholeView(); err != nil {
		return nil, err
	}
	f0, counted := forks()
	if idx, ok := looks.namesakes(f0, counted); ok {
		var live []verdict.Namesake
		for _, n := range idx[inner] {
			// A thread is checked by its own status under its leader's
			// task directory: the leader's says nothing of it.
			path, exited := "/proc/"+strconv.Itoa(n.Pid)+"/status", statusExited
			if n.Leader != 0 {
				path, exited = fmt.Sprintf("/proc/%d/task/%d/status", n.Leader, n.Pid), threadExited
			}
			b, err := readFile(path)
			switch {
			case gone(err):
			case err != nil:
				return nil, fmt.Errorf("cannot read %s (%v), so whether a container's process has this pid cannot be told: run as root", path, errors.Unwrap(err))
			case !exited(string(b)):
				live = append(live, n)
			}
		}
		return live, nil
	}
	idx, err := namesakes()
	if err != nil {
		return nil, err
	}
	if counted {
		looks.keepNamesakes(f0, idx)
	}
	return idx[inner], nil
}

// namesakes looks at every process for Namesakes.
func namesakes() (map[int][]verdict.Namesake, error) {
	pids, err := procPids()
	if err != nil {
		return nil, err
	}
	idx := map[int][]verdict.Namesake{}
	for _, p := range pids {
		ns, err := os.Readlink("/proc/" + p + "/ns/pid")
		if err == nil && ns == initialPidNS {
			continue
		}
		if gone(err) {
			continue
		}
		b, err := readFile("/proc/" + p + "/status")
		if gone(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read /proc/%s/status (%v), so whether a container's process has this pid cannot be told: run as root", p, errors.Unwrap(err))
		}
		st := string(b)
		levels := nsPids(st)
		if levels == nil {
			return nil, errors.New("this kernel shows no NSpid in /proc/<pid>/status (before Linux 4.1), so a container's pids cannot be seen")
		}
		if len(levels) < 2 {
			// In the initial namespace, and so are its threads: a thread
			// is always in its leader's pid namespace.
			continue
		}
		pid, _ := strconv.Atoi(p)
		if !statusExited(st) {
			addNamesakes(idx, st, verdict.Namesake{Pid: pid, NS: ns})
		}
		if err := threadNamesakes(idx, p, pid, ns); err != nil {
			return nil, err
		}
	}
	return idx, nil
}

// threadNamesakes adds to idx the threads of process p (host pid pid, in
// pid namespace ns) other than its leader, each by its own thread id in
// every namespace below the reader's. A process that exited meanwhile, or
// a thread that did, holds nothing; any other status that cannot be read
// is doubt, and an error.
func threadNamesakes(idx map[int][]verdict.Namesake, p string, pid int, ns string) error {
	task := "/proc/" + p + "/task"
	f, err := os.Open(task)
	if gone(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot list %s (%v), so whether a container's thread has this pid cannot be told: run as root", task, errors.Unwrap(err))
	}
	tids, err := f.Readdirnames(-1)
	f.Close()
	if gone(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot list %s (%v), so whether a container's thread has this pid cannot be told: run as root", task, errors.Unwrap(err))
	}
	for _, t := range tids {
		tid, err := strconv.Atoi(t)
		if err != nil || tid <= 0 || t == p {
			continue // the leader was read as the process
		}
		path := task + "/" + t + "/status"
		b, err := readFile(path)
		if gone(err) {
			continue // the thread exited while it was read
		}
		if err != nil {
			return fmt.Errorf("cannot read %s (%v), so whether a container's thread has this pid cannot be told: run as root", path, errors.Unwrap(err))
		}
		st := string(b)
		if nsPids(st) == nil {
			return fmt.Errorf("%s shows no NSpid, so whether a container's thread has this pid cannot be told", path)
		}
		if threadExited(st) {
			continue
		}
		addNamesakes(idx, st, verdict.Namesake{Pid: tid, Leader: pid, NS: ns})
	}
	return nil
}

// addNamesakes indexes n, whose status (a process's or a thread's) is st,
// by each pid the NSpid line gives it below the reader's namespace.
func addNamesakes(idx map[int][]verdict.Namesake, st string, n verdict.Namesake) {
	levels := nsPids(st)
	if len(levels) < 2 {
		return
	}
	n.Comm, _ = statusField(st, "Name")
	for _, l := range levels[1:] {
		if inner, err := strconv.Atoi(l); err == nil {
			m := n
			m.Inner = inner
			idx[inner] = append(idx[inner], m)
		}
	}
}

// NamespaceInUse implements PidSpace from every process's ns/pid link,
// read afresh on every call, or, where the link may not be read, the NSpid
// line of its status, which says whether it is in the initial namespace
// (and so not in ns, which is never the initial one: this reader is in
// that). A zombie's link still reads, so a namespace whose last process is
// a zombie not yet reaped is still in use.
func (KernelProbe) NamespaceInUse(ns string) (bool, error) {
	if err := wholeView(); err != nil {
		return false, err
	}
	f0, counted := forks()
	if looks.ended(f0, counted, ns) {
		return false, nil
	}
	used, err := namespaceInUse(ns)
	if err == nil && !used && counted {
		looks.keepEnded(f0, ns)
	}
	return used, err
}

// namespaceInUse looks at every process for NamespaceInUse.
func namespaceInUse(ns string) (bool, error) {
	pids, err := procPids()
	if err != nil {
		return false, err
	}
	for _, p := range pids {
		link, err := os.Readlink("/proc/" + p + "/ns/pid")
		switch {
		case err == nil && link == ns:
			return true, nil
		case err == nil, gone(err):
		case ownNS(p):
			// Its link may not be read (a process more privileged than
			// this one), but its status says it is in the initial
			// namespace, which is not ns.
		default:
			return false, fmt.Errorf("cannot read /proc/%s/ns/pid (%v), so whether a process is still in pid namespace %s cannot be told: run as root with CAP_SYS_PTRACE", p, errors.Unwrap(err), ns)
		}
	}
	return false, nil
}

// A look at every process holds for as long as no process has been
// created since it began: a pid, or a pid namespace's member, comes into
// being only by fork (a process's own pids and namespace never change
// after it), so what the look found absent is absent still. What it found
// present may have exited since, so that is checked again, process by
// process. The kernel counts every fork and clone since boot ("processes"
// in /proc/stat, for the whole machine whatever the namespace), and the
// count is read at each question, after the claim the question follows:
// the questions the fix protocol asks afresh after each claim then cost
// one look per sweep on a quiet machine instead of one per lock, and are as
// fresh as before.
type lookCache struct {
	mu    sync.Mutex
	forks uint64
	idx   map[int][]verdict.Namesake // nil: no look at forks
	empty map[string]bool            // namespaces a look at forks found no process in
}

var looks lookCache

// forks reads the machine's count of processes created since boot
// (total_forks, which copy_process raises for every process and thread).
// ok is false where it cannot be read or is zero, as gVisor's /proc/stat
// always says ("processes 0", pkg/sentry/fsimpl/proc/tasks_files.go):
// nothing is then kept between looks.
var forks = func() (uint64, bool) {
	b, err := readFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	return parseForks(string(b))
}

// parseForks reads the "processes" line of a /proc/stat.
func parseForks(stat string) (uint64, bool) {
	for _, l := range strings.Split(stat, "\n") {
		if v, ok := strings.CutPrefix(l, "processes "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil && n > 0
		}
	}
	return 0, false
}

func (c *lookCache) namesakes(f uint64, counted bool) (map[int][]verdict.Namesake, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !counted || c.forks != f || c.idx == nil {
		return nil, false
	}
	return c.idx, true
}

func (c *lookCache) ended(f uint64, counted bool, ns string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return counted && c.forks == f && c.empty[ns]
}

// at makes the cache that of the look that began at fork count f.
func (c *lookCache) at(f uint64) {
	if c.forks != f {
		c.forks, c.idx, c.empty = f, nil, nil
	}
}

func (c *lookCache) keepNamesakes(f uint64, idx map[int][]verdict.Namesake) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at(f)
	c.idx = idx
}

func (c *lookCache) keepEnded(f uint64, ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at(f)
	if c.empty == nil {
		c.empty = map[string]bool{}
	}
	c.empty[ns] = true
}

// statusField returns the value of the line "key:\t<value>" of a
// /proc/<pid>/status.
func statusField(status, key string) (string, bool) {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// threadExited says whether the thread whose /proc/<pid>/task/<tid>/status
// is status has exited: its own state is Z or X (a thread other than its
// process's leader is released at once, but one that is traced waits for
// its tracer as a zombie). Anything it cannot read is doubt: not exited.
func threadExited(status string) bool {
	state, _ := statusField(status, "State")
	return state != "" && strings.ContainsAny(state[:1], "ZXx")
}

// statusExited is statExited for a /proc/<pid>/status: state Z or X with a
// single thread. Anything it cannot read is doubt: not exited.
func statusExited(status string) bool {
	state, _ := statusField(status, "State")
	threads, _ := statusField(status, "Threads")
	if state == "" || !strings.ContainsAny(state[:1], "ZXx") {
		return false
	}
	n, err := strconv.Atoi(threads)
	return err == nil && n <= 1
}

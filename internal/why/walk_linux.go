//go:build linux

package why

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/internal/shellquote"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// maxDepth bounds a chain (and a descent): past it, the walk says so.
const maxDepth = 64

// walker walks processes for one report, with one look at the kernel's
// lock table and every process's open files.
type walker struct {
	ev    *kernel.KernelEvidence
	judge *verdict.Judge
	host  verdict.Host
	myNS  string
	ends  map[End]bool
	order []End
}

// Explain walks each of pids and what they wait for. A pid that is not a
// running process is an error naming it.
func Explain(pids []int) (*Report, error) {
	w := &walker{ev: &kernel.KernelEvidence{}, host: judges.Host(), ends: map[End]bool{}}
	w.judge = judges.Doctor(w.host, false)
	w.myNS, _ = os.Readlink("/proc/self/ns/pid")
	rep := &Report{Version: Version}
	for _, pid := range pids {
		if _, err := os.Stat(procPath(pid)); err != nil {
			return nil, fmt.Errorf("no process %d here: %w", pid, unwrap(err))
		}
		rep.Processes = append(rep.Processes, w.proc(pid, nil, 0))
	}
	rep.Ends = w.order
	return rep, nil
}

func procPath(pid int, elem ...string) string {
	return filepath.Join(append([]string{"/proc", strconv.Itoa(pid)}, elem...)...)
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// end records where a chain ended, once per report.
func (w *walker) end(kind, why string) (string, string) {
	e := End{kind, why}
	if !w.ends[e] {
		w.ends[e] = true
		w.order = append(w.order, e)
	}
	return kind, why
}

// proc describes pid: what it and its threads wait on, and its
// descendants; chain is the pids that led here, along lock waits and
// descents, for finding cycles.
func (w *walker) proc(pid int, chain []int, depth int) *Proc {
	p := &Proc{Pid: pid, Command: kernel.Command(pid)}
	w.namespaces(p)
	if slices.Contains(chain, pid) {
		p.Cycle, p.Doing = true, "already on this chain"
		return p
	}
	if depth > maxDepth {
		p.Doing = fmt.Sprintf("not walked further: the chain is longer than %d", maxDepth)
		return p
	}
	chain = append(chain, pid)
	if path, ok := lockctlWait(pid); ok {
		p.Doing = "a lockctl waiting for a lock"
		p.Waits = append(p.Waits, w.lockctlWait(path, pid, chain, depth))
	}
	tids := threads(pid)
	for _, tid := range tids {
		doing, wait, doubt := w.task(pid, tid)
		switch {
		case doubt != "":
			if p.Doubt == "" {
				p.Doubt = doubt
			}
		case wait != nil:
			if tid != pid {
				wait.Tid = tid
			}
			w.holders(wait, pid, chain, depth)
			p.Waits = append(p.Waits, wait)
		case tid == pid && p.Doing == "":
			p.Doing = doing
		}
	}
	if p.Doing == "" && len(p.Waits) > 0 {
		p.Doing = "in a lock wait"
	}
	if p.Doubt != "" {
		w.end(EndDoubt, fmt.Sprintf("pid %d (%s): %s", pid, p.Command, p.Doubt))
	}
	var quiet []*Proc
	for _, c := range children(pid, tids) {
		cp := w.proc(c, chain, depth+1)
		if len(cp.Waits) > 0 || len(cp.Children) > 0 || cp.Cycle {
			p.Children = append(p.Children, cp)
		} else {
			quiet = append(quiet, cp)
		}
	}
	if len(p.Children) == 0 && len(p.Waits) == 0 && len(quiet) <= maxShown {
		// A process that only waits for its children (flock(1), a shell)
		// is doing what they do: show them.
		p.Children = quiet
	} else {
		p.Quiet = len(quiet)
	}
	return p
}

// maxShown is how many children in no lock wait are shown under a process
// that does nothing else; more are counted.
const maxShown = 8

// namespaces fills in pid's pids below the reader's namespace and, where
// its pid namespace is not the reader's, that namespace.
func (w *walker) namespaces(p *Proc) {
	if b, err := os.ReadFile(procPath(p.Pid, "status")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f, ok := strings.CutPrefix(line, "NSpid:"); ok {
				for _, s := range strings.Fields(f)[1:] {
					if n, err := strconv.Atoi(s); err == nil {
						p.NSPids = append(p.NSPids, n)
					}
				}
			}
		}
	}
	if ns, err := os.Readlink(procPath(p.Pid, "ns", "pid")); err == nil && ns != w.myNS {
		p.PidNS = ns
	}
}

// threads lists pid's tasks, its main thread first.
func threads(pid int) []int {
	ents, err := os.ReadDir(procPath(pid, "task"))
	if err != nil {
		return []int{pid}
	}
	out := []int{pid}
	for _, e := range ents {
		if t, err := strconv.Atoi(e.Name()); err == nil && t != pid {
			out = append(out, t)
		}
	}
	return out
}

// children lists pid's children, from each task's children file, or else
// from every process's parent.
func children(pid int, tids []int) []int {
	var out []int
	ok := false
	for _, t := range tids {
		b, err := os.ReadFile(procPath(pid, "task", strconv.Itoa(t), "children"))
		if err != nil {
			continue
		}
		ok = true
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	if ok {
		return out
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && kernel.Parent(n) == pid {
			out = append(out, n)
		}
	}
	return out
}

// lockctlWait says whether pid is a lockctl waiting for a lock, by the
// mark it makes (kernel.MarkWait), and on which path.
func lockctlWait(pid int) (string, bool) {
	dir := procPath(pid, "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	for _, e := range ents {
		t, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil || !strings.HasPrefix(t, "/memfd:"+kernel.WaitMarkName) {
			continue
		}
		b, err := readSmall(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if path, ok := strings.CutSuffix(string(b), "\n"); ok && filepath.IsAbs(path) {
			return path, true
		}
	}
	return "", false
}

// readSmall reads at most 8 KiB of path, never blocking.
func readSmall(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 8192)
	n, err := f.ReadAt(b, 0)
	if n > 0 {
		err = nil
	}
	return b[:n], err
}

// task reads what task tid of pid is doing: a lock wait, or else in
// words; doubt where it cannot be read.
func (w *walker) task(pid, tid int) (doing string, wait *Wait, doubt string) {
	sysPath := procPath(pid, "task", strconv.Itoa(tid), "syscall")
	b, err := os.ReadFile(sysPath)
	if err != nil {
		return "", nil, fmt.Sprintf("cannot read %s (%v): what it waits for is not known; %s", sysPath, unwrap(err), w.host.LookHint())
	}
	f := strings.Fields(string(b))
	switch {
	case len(f) == 0:
		return "", nil, fmt.Sprintf("%s is empty: what it waits for is not known", sysPath)
	case f[0] == "running":
		return "running", nil, ""
	case f[0] == "-1":
		return "blocked outside a system call (" + state(pid) + ")", nil, ""
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil || len(f) < 3 {
		return "", nil, fmt.Sprintf("%s reads %q: what it waits for is not known", sysPath, strings.TrimSpace(string(b)))
	}
	arg := func(i int) uint64 {
		v, _ := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		return v
	}
	name := syscallName(nr)
	switch nr {
	case unix.SYS_FLOCK:
		op := arg(1)
		if op&unix.LOCK_NB != 0 {
			break
		}
		mode := "shared"
		if op&unix.LOCK_EX != 0 {
			mode = "exclusive"
		}
		return "", w.lockWait(pid, int(arg(0)), "flock", mode), ""
	case unix.SYS_FCNTL:
		switch arg(1) {
		case unix.F_SETLKW:
			return "", w.lockWait(pid, int(arg(0)), "POSIX lock", ""), ""
		case unix.F_OFD_SETLKW:
			return "", w.lockWait(pid, int(arg(0)), "OFD lock", ""), ""
		}
	case unix.SYS_WAIT4, unix.SYS_WAITID:
		return "waits for its children", nil, ""
	case unix.SYS_READ, unix.SYS_READV, unix.SYS_PREAD64:
		return "reading " + fdName(pid, int(arg(0))) + ": not a lock wait", nil, ""
	case unix.SYS_WRITE, unix.SYS_WRITEV, unix.SYS_PWRITE64:
		return "writing to " + fdName(pid, int(arg(0))) + ": not a lock wait", nil, ""
	}
	if name == "" {
		name = "system call " + f[0]
	}
	doing = "in " + name
	if k := waitKinds[name]; k != "" {
		doing = k + " (" + name + ")"
	}
	return doing + ": not in a lock wait the kernel shows", nil, ""
}

// state is pid's state letter from /proc/<pid>/stat, in words.
func state(pid int) string {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return "state unknown"
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || len(b) < i+3 {
		return "state unknown"
	}
	switch b[i+2] {
	case 'T':
		return "stopped by a signal"
	case 't':
		return "stopped by a tracer"
	case 'Z':
		return "a zombie: it has exited"
	case 'D':
		return "in uninterruptible sleep"
	}
	return "state " + string(b[i+2])
}

// fdName is what pid's descriptor fd names: a path, pipe:[N], socket:[N].
func fdName(pid, fd int) string {
	t, err := os.Readlink(procPath(pid, "fd", strconv.Itoa(fd)))
	if err != nil {
		return fmt.Sprintf("descriptor %d", fd)
	}
	return t
}

// lockWait is the wait of pid, blocked in a lock call on descriptor fd:
// the file, and whether /proc/locks shows the blocked request.
func (w *walker) lockWait(pid, fd int, how, mode string) *Wait {
	fdPath := procPath(pid, "fd", strconv.Itoa(fd))
	wt := &Wait{How: how, Mode: mode, Path: fdName(pid, fd)}
	var st unix.Stat_t
	if err := unix.Stat(fdPath, &st); err != nil {
		wt.End, wt.EndWhy = w.end(EndDoubt, fmt.Sprintf("cannot read %s (%v): the lock waited for is not known", fdPath, err))
		return wt
	}
	for _, x := range w.ev.Waiters(uint64(st.Dev), st.Ino) {
		if x.Pid == pid || (x.Pid <= 0 && how == "OFD lock") {
			wt.InTable = true
			if wt.Mode == "" {
				wt.Mode = modeWord(x.Mode)
			}
		}
	}
	wt.dev, wt.ino = uint64(st.Dev), st.Ino
	return wt
}

func modeWord(m string) string {
	switch m {
	case "WRITE":
		return "exclusive"
	case "READ":
		return "shared"
	}
	return ""
}

// holders finds who holds the lock wt waits on, judges it as doctor does,
// and walks each holder.
func (w *walker) holders(wt *Wait, waiter int, chain []int, depth int) {
	if wt.End != "" {
		return
	}
	if l, err := scan.ReadOne(filepath.Dir(wt.Path), filepath.Base(wt.Path)); err == nil && l != nil {
		r := w.judge.Judge(l)
		wt.Verdict, wt.Reason = string(r.Verdict), r.Reason
	}
	hs, complete := w.ev.Holders(wt.dev, wt.ino)
	var pids []int
	for _, h := range hs {
		if h.How != "open" && h.Pid > 0 && h.Pid != waiter && !slices.Contains(pids, h.Pid) {
			pids = append(pids, h.Pid)
		}
	}
	if len(pids) == 0 {
		// The taker has exited and the lock lives on in a descriptor
		// (an inherited flock, an OFD lock): whoever has it open.
		for _, h := range hs {
			if h.How == "open" && h.Pid > 0 && h.Pid != waiter && !slices.Contains(pids, h.Pid) {
				pids = append(pids, h.Pid)
			}
		}
	}
	if len(pids) == 0 {
		why := "no holder of it could be found"
		if !complete {
			why += ", and not every process's open files could be read (" + w.host.LookHint() + ")"
		}
		wt.End, wt.EndWhy = w.end(EndDoubt, wt.Path+": "+why)
		return
	}
	w.walkHolders(wt, pids, chain, depth)
}

// lockctlWait is the wait of a lockctl (pid) on the lock at path, judged
// as doctor judges it; its holders are walked.
func (w *walker) lockctlWait(path string, pid int, chain []int, depth int) *Wait {
	wt := &Wait{How: "lockctl", Path: path}
	l, err := scan.ReadOne(filepath.Dir(path), filepath.Base(path))
	if err != nil || l == nil {
		wt.End, wt.EndWhy = w.end(EndDoubt, fmt.Sprintf("%s cannot be read: %v", path, err))
		return wt
	}
	r := w.judge.Judge(l)
	wt.Verdict, wt.Reason = string(r.Verdict), r.Reason
	var pids []int
	add := func(p int) {
		if p > 0 && p != pid && !slices.Contains(pids, p) {
			pids = append(pids, p)
		}
	}
	switch r.Verdict {
	case verdict.Live:
		for _, h := range l.Holders {
			if h.Holder != nil {
				add(int(h.Holder.Pid))
			}
		}
		for _, k := range r.Kernel {
			if k.How != "open" {
				add(k.Pid)
			}
		}
	case verdict.Gone, verdict.Claimed:
		what := "nothing here removes it: " + strings.Join(r.Notes, "; ")
		if len(r.Remove) > 0 {
			wt.Fix = "lockctl doctor --fix " + shellquote.Quote(path)
			what = wt.Fix + " removes it"
		}
		wt.End, wt.EndWhy = w.end(EndGone, fmt.Sprintf("%s: %s; %s", path, r.Reason, what))
		return wt
	case verdict.Free, verdict.Idle:
		wt.End, wt.EndWhy = w.end(EndRuns, fmt.Sprintf("%s is %s now: the lockctl waiting on it takes it at its next try", path, r.Verdict))
		return wt
	}
	if len(pids) == 0 {
		wt.End, wt.EndWhy = w.end(EndDoubt, fmt.Sprintf("%s is %s: %s", path, r.Verdict, r.Reason))
		return wt
	}
	w.walkHolders(wt, pids, chain, depth)
	return wt
}

// walkHolders walks each holder of wt and says where the wait's chain
// ends: the worst of its holders' ends.
func (w *walker) walkHolders(wt *Wait, pids []int, chain []int, depth int) {
	worst := ""
	for _, h := range pids {
		hp := w.proc(h, chain, depth+1)
		wt.Holders = append(wt.Holders, hp)
		kind, why := w.endOf(hp)
		if rank[kind] > rank[worst] {
			worst, wt.EndWhy = kind, why
		}
	}
	wt.End = worst
}

var rank = map[string]int{"": 0, EndRuns: 1, EndDoubt: 2, EndGone: 3, EndCycle: 4}

// endOf is where the chain through holder p ends.
func (w *walker) endOf(p *Proc) (string, string) {
	who := fmt.Sprintf("pid %d (%s)", p.Pid, p.Command)
	if p.Cycle {
		return w.end(EndCycle, fmt.Sprintf("a deadlock: %s waits, through the chain above, on a lock that itself holds", who))
	}
	worst, why := "", ""
	consider := func(k, y string) {
		if rank[k] > rank[worst] {
			worst, why = k, y
		}
	}
	for _, wt := range p.Waits {
		consider(wt.End, wt.EndWhy)
	}
	for _, c := range p.Children {
		consider(w.endOf(c))
	}
	switch {
	case worst != "":
		return worst, why
	case p.Doubt != "":
		return w.end(EndDoubt, who+": "+p.Doubt)
	}
	doing := p.Doing
	for _, c := range p.Children {
		doing += fmt.Sprintf("; pid %d (%s) is %s", c.Pid, c.Command, c.Doing)
	}
	return w.end(EndRuns, fmt.Sprintf("%s holds the lock and is not in a lock wait (%s)", who, doing))
}

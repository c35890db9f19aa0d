// Package judges wires the running kernel into lockctl, in one place: it
// makes the verdict.Judge of each use (a doctor run, --fix's judgement
// again after a claim, an acquire's try, a release, a reservation), each
// next to the reason for its cache and freshness settings, and answers
// the other questions package lock asks of the kernel (Kernel). The
// product packages (fix, report, lock, internal/doctor) never import
// internal/kernel; internal/cli hands them what this package makes.
//
// The invariant of the wiring: the judge that judges a claimed record
// again before removing it (Sweep) and the judge of every acquire try
// (Acquire) ask the kernel afresh every time. Neither caches a process's
// state (no verdict.CachingProbe), and their evidence is Fresh.
// TestSweepAndAcquireAskAfresh pins the settings; mutants rejudge-cached
// and acquire-try-cached break them.
package judges

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/verdict"
)

// Doctor returns the judge of one doctor run: the first judgement of every
// lock found. It caches what it learns of each pid for the run (a holder of
// thousands of locks is probed once; the run's answers are only a report's
// until --fix judges each lock again with Sweep), and looks at the kernel's
// lock table and every process's open files once per run.
//
// Where the kernel's lock table is not the whole machine's, doctor asks
// the one file for its POSIX and OFD locks, taking none, and a flock it
// cannot see leaves a gone holder unknown; with fixing (--fix), which
// acts, it may take the flock for an instant to see it (Sweep's judge does
// the same).
func Doctor(host verdict.Host, fixing bool) *verdict.Judge {
	return &verdict.Judge{Host: host, Probe: &verdict.CachingProbe{Next: kernel.KernelProbe{}}, Evidence: &kernel.KernelEvidence{}, FileLocks: kernel.FileLocks{Take: fixing}}
}

// Sweep returns the judge with which --fix (fix.New) judges a claimed
// record again, just before removing the lock: the second judgement is a
// new question to the kernel. It asks the kernel directly, with no cache,
// and gathers the kernel's evidence afresh for every question, since a
// process may have opened or locked the lock since the run's first look.
// Where the kernel's lock table is not the whole machine's (a child pid
// namespace), it asks the one file instead, and may take its flock for an
// instant to do so: a refusal is a holder, success proves there is none.
func Sweep(host verdict.Host) *verdict.Judge {
	return &verdict.Judge{Host: host, Probe: kernel.KernelProbe{}, Evidence: &kernel.KernelEvidence{Fresh: true}, FileLocks: kernel.FileLocks{Take: true}}
}

// Acquire returns the judge of an acquire's tries (and of the sweep of a
// gone lock that acquire then makes): it judges the lock that stands in
// the way on every try, asking the kernel afresh each time, with no cache,
// since a wait ends exactly when the holder's state changes.
//
// The kernel's lock table is asked only when a holder reads gone: a
// running process with a flock on the lock still holds it. Nothing else of
// the kernel's evidence: acquire never breaks an owner-less lock. Where the
// table is not the whole machine's (in a container), the lock itself is
// asked, its flock taken for an instant: a refusal is a holder, and
// success lets acquire break a lock whose holder crashed in this container
// and that nobody holds.
func Acquire(host verdict.Host) *verdict.Judge {
	return &verdict.Judge{Host: host, Probe: kernel.KernelProbe{}, Evidence: verdict.LocksOnly{Evidence: &kernel.KernelEvidence{Fresh: true}}, FileLocks: kernel.FileLocks{Take: true}}
}

// Release returns the judge with which a release finishes one of its own
// that was interrupted after its record was claimed: the claim's maker is
// asked about once, directly. No evidence: the claim is judged by its
// maker and its record, never by who holds the lock's files.
func Release(host verdict.Host) *verdict.Judge {
	return &verdict.Judge{Host: host, Probe: kernel.KernelProbe{}}
}

// Reserve returns the judge of a reservation (adopting or releasing it):
// a reservation is live by its deadline, on this boot's monotonic clock,
// not by its reserver, so the kernel is asked directly, once, and no
// evidence is needed.
func Reserve(host verdict.Host) *verdict.Judge {
	return &verdict.Judge{Host: host, Probe: kernel.KernelProbe{}}
}

// localHost is read once per process: boot id, pid namespace and host do
// not change under a running process.
var localHost = sync.OnceValue(kernel.LocalHost)

// Host returns this machine: its boot id, pid namespace, host name and
// clocks, read once per process (they cannot change under it). A part that
// cannot be read is empty, with its error where the Host has one.
func Host() verdict.Host { return localHost() }

// Detail reads a live process's command line and user, for a report; nil
// where they cannot be read.
func Detail(pid int) *verdict.ProcDetail { return kernel.Detail(pid) }

// Kernel is the running kernel as package lock asks it (lock.Kernel):
// internal/cli hands it to lock through lock.Options.Kernel. It holds no
// state of its own and is safe for concurrent use.
type Kernel struct{}

// Host implements lock.Kernel: this machine, read once per process.
func (Kernel) Host() verdict.Host { return localHost() }

// selfPid is this process's pid: a Go process cannot fork without exec,
// so it cannot change.
var selfPid = os.Getpid()

// selfStart is this process's own start time once it has been read: it
// cannot change while the process runs, and reading it was a fifth of an
// Acquire's cost. A failure to read it is not kept.
var selfStart atomic.Uint64

// Start implements lock.Kernel: the start time of a running pid, the fence
// of a record; an error for a pid that is not running or whose start time
// cannot be read.
func (Kernel) Start(pid int) (uint64, error) {
	if pid != selfPid {
		return probeStart(pid)
	}
	if s := selfStart.Load(); s != 0 {
		return s, nil
	}
	s, err := probeStart(pid)
	if err == nil {
		selfStart.Store(s)
	}
	return s, err
}

func probeStart(pid int) (uint64, error) {
	p := kernel.KernelProbe{}.Probe(pid)
	if p.State != verdict.StateRunning || !p.HasStart {
		if p.Err != nil {
			return 0, fmt.Errorf("pid %d is not a running process whose start time can be read (%v)", pid, p.Err)
		}
		return 0, fmt.Errorf("pid %d is not a running process whose start time can be read", pid)
	}
	return p.Start, nil
}

// AcquireJudge implements lock.Kernel with Acquire.
func (Kernel) AcquireJudge(host verdict.Host) *verdict.Judge { return Acquire(host) }

// ReleaseJudge implements lock.Kernel with Release.
func (Kernel) ReleaseJudge(host verdict.Host) *verdict.Judge { return Release(host) }

// ReserveJudge implements lock.Kernel with Reserve.
func (Kernel) ReserveJudge(host verdict.Host) *verdict.Judge { return Reserve(host) }

// OthersOn implements lock.Kernel: the processes other than this one that
// are on the file (dev, ino) at dir/name, for a release deciding whether
// it may remove the lock it holds: the requests blocked behind a kernel
// lock on it in the kernel's lock table, and every process that has it
// open. Both are asked: a flock(1) woken by an unlock, or stopped while it
// waited, or between its open and its flock, is in no table, but it has
// the file open. complete is false when not every process's open files
// could be seen.
func (k Kernel) OthersOn(dir, name string, dev, ino uint64) (others []verdict.KernelHolder, complete bool) {
	ev := &kernel.KernelEvidence{}
	waiting := waitersOn(ev, dir, name, dev, ino)
	open, complete := ev.Holders(dev, ino)
	self := os.Getpid()
	for _, h := range append(waiting, open...) {
		if h.Pid != self {
			others = append(others, h)
		}
	}
	return others, complete
}

// WaitersOn lists the requests blocked behind a kernel lock on the file
// (dev, ino) at dir/name, from the kernel's lock table alone, leaving out
// this process: for a release whose lock nobody else has opened since it
// was taken (lock's openWatch).
func (Kernel) WaitersOn(dir, name string, dev, ino uint64) (others []verdict.KernelHolder) {
	self := os.Getpid()
	for _, h := range waitersOn(&kernel.KernelEvidence{}, dir, name, dev, ino) {
		if h.Pid != self {
			others = append(others, h)
		}
	}
	return others
}

func waitersOn(ev *kernel.KernelEvidence, dir, name string, dev, ino uint64) []verdict.KernelHolder {
	if d, ok := any(ev).(verdict.LockDetail); ok {
		// The table lists the file under its mount's device (Cover).
		return d.Waiters(d.Cover(dir, name, fsx.Stat{Dev: dev, Ino: ino}).Dev, ino)
	}
	return nil
}

// LockHolders implements lock.Kernel: the processes that hold the file
// (dev, ino), at dir/name, by a kernel lock, in the order the kernel shows
// them, for an error that names who holds a kernel lock. It looks at the
// kernel's lock table once; where that names no running process (the taker
// has exited: flock(1) in "exec 9>>L; flock 9", or a SIGKILLed lockctl
// run), whoever has the file open with the lock holds it, and every
// process's open files are looked at, once, when the wait has already
// ended. Holders that only have the file open, and locks whose taker has
// exited (named only as inherited), are left out.
func (Kernel) LockHolders(dir, name string, dev, ino uint64) []verdict.KernelHolder {
	ev := &kernel.KernelEvidence{}
	var hs []verdict.KernelHolder
	if t, ok := any(ev).(verdict.LockTable); ok {
		// The table lists the file under its mount's device, which on
		// btrfs is not its st_dev (LockDetail.Cover).
		key := dev
		if d, ok := t.(verdict.LockDetail); ok {
			key = d.Cover(dir, name, fsx.Stat{Dev: dev, Ino: ino}).Dev
		}
		hs = t.Locks(key, ino)
	}
	if len(hs) == 0 || hs[0].Pid <= 0 {
		hs, _ = ev.Holders(dev, ino)
	}
	var out []verdict.KernelHolder
	for _, h := range hs {
		if h.How != "open" && !strings.HasSuffix(h.How, kernel.InheritedNote) {
			out = append(out, h)
		}
	}
	return out
}

// NotAHolder binds each of pids, which an operator vouches holds none of
// the locks doctor judges (--not-a-holder), to its start time now. It
// refuses a pid that is not a running process whose start time can be
// read, and a lockctl process, whose locks are its records.
func NotAHolder(pids []int) (map[int]uint64, error) {
	if len(pids) == 0 {
		return nil, nil
	}
	out := map[int]uint64{}
	for _, pid := range pids {
		start, err := probeStart(pid)
		if err != nil {
			return nil, fmt.Errorf("--not-a-holder %d: %w", pid, err)
		}
		if kernel.Program(pid) == "lockctl" || kernel.Command(pid) == "lockctl" {
			return nil, fmt.Errorf("--not-a-holder %d: pid %d is a lockctl process, whose locks are its records: it cannot be vouched for", pid, pid)
		}
		out[pid] = start
	}
	return out, nil
}

// Vouch has j's evidence take vouched (NotAHolder) as holding none of the
// locks it is asked about, where its open files cannot be read.
func Vouch(j *verdict.Judge, vouched map[int]uint64) {
	if e, ok := j.Evidence.(*kernel.KernelEvidence); ok && len(vouched) > 0 {
		e.Vouched = vouched
	}
}

//go:build linux

// KernelEvidence: who holds a file, from the kernel's lock table
// (locktable_linux.go) and every process's open files
// (openfiles_linux.go), each read once or, with Fresh, on every question;
// its scopes are in scopes_linux.go.

package kernel

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/verdict"
)

// KernelEvidence reads /proc/locks and every descriptor table of every
// process (/proc/<pid>/fd, and /proc/<pid>/task/<tid>/fd for a thread with
// a table of its own), once, the first time it is asked (with Fresh, on
// every question). It never forks (no lsof, no fuser).
type KernelEvidence struct {
	// Probe checks that a pid named in /proc/locks is still running (a
	// flock outlives the process that took it when a child inherited the
	// descriptor). Nil means KernelProbe.
	Probe verdict.Probe

	// Fresh re-reads /proc/locks, and looks at every process's open files
	// again, on every question: for re-judging a claimed lock just before
	// it is removed, when a process may have opened it since the last
	// question (the legacy sweep; safety before speed there).
	Fresh bool

	// Vouched are the processes an operator vouched hold none of the locks
	// asked about (doctor --not-a-holder), each with its start time when
	// doctor began: one of them whose open files cannot be read does not
	// make a look incomplete, while it still has that start time. It
	// never touches /proc/locks' entries.
	Vouched map[int]uint64

	once sync.Once
	mu   sync.Mutex // guards look, with Fresh
	look *openLook  // the look at every process's open files: once, or the last one with Fresh

	tableOnce sync.Once
	table     lockTable

	// git is the look at every git process (GitWorkers), taken once.
	gitOnce sync.Once
	git     gitLook

	scopesOnce     sync.Once
	scopes         map[string]bool
	scopesComplete bool
}

type devIno struct{ dev, ino uint64 }

// Holders implements Evidence.
func (k *KernelEvidence) Holders(dev, ino uint64) ([]verdict.KernelHolder, bool) {
	look := k.openFiles()
	t := k.lockTable()
	locks := t.held
	probe := k.Probe
	if probe == nil {
		probe = KernelProbe{}
	}
	key := devIno{dev, ino}
	var hs []verdict.KernelHolder
	seen := map[int]bool{}
	for _, l := range locks[key] {
		if l.pid > 0 && !seen[l.pid] {
			if p := probe.Probe(l.pid); p.State == verdict.StateRunning {
				seen[l.pid] = true
				hs = append(hs, verdict.KernelHolder{Pid: l.pid, Comm: p.Comm, How: l.how, Mode: l.mode})
			}
		}
	}
	// A lock whose recorded pid is gone (inherited, or an OFD lock, which
	// /proc/locks shows as pid -1) is held by whoever has the file open.
	how, mode := "open", ""
	if len(locks[key]) > 0 && len(hs) == 0 {
		how, mode = locks[key][0].how, locks[key][0].mode
	}
	// A process blocked in flock or F_SETLKW on the file has it open, but
	// waits for the lock: it is a waiter (Waiters), not a holder, as
	// lslocks shows it. While anyone waits, someone holds the lock, and
	// the table lists that lock.
	waits := map[int]bool{}
	for _, w := range t.waiting[key] {
		if w.pid > 0 {
			waits[w.pid] = true
		}
	}
	for _, pid := range look.open[key] {
		if !seen[pid] && !waits[pid] {
			seen[pid] = true
			hs = append(hs, verdict.KernelHolder{Pid: pid, Comm: comm(pid), How: how, Mode: mode})
		}
	}
	// The kernel drops an advisory lock when the last descriptor to it
	// closes: an entry in /proc/locks is a held lock, whoever holds it now,
	// even if its locker has exited and the holder opened the file after
	// the index of open files was built.
	if len(hs) == 0 && len(locks[key]) > 0 {
		l := locks[key][0]
		hs = append(hs, verdict.KernelHolder{Pid: l.pid, How: l.how + InheritedNote, Mode: l.mode})
	}
	return hs, look.complete && t.ok && len(k.stillUnseen(look.unseen)) == 0
}

// stillUnseen is unseen without the processes vouched for (Vouched) that
// still have the start time they were vouched for with.
func (k *KernelEvidence) stillUnseen(unseen []int) []int {
	if len(k.Vouched) == 0 {
		return unseen
	}
	var out []int
	for _, pid := range unseen {
		start, ok := k.Vouched[pid]
		if p := (KernelProbe{}).Probe(pid); !ok || p.State != verdict.StateRunning || !p.HasStart || p.Start != start {
			out = append(out, pid)
		}
	}
	return out
}

// Unread implements verdict.Unread: the processes whose open files the
// look could not read, each named, and which of them were vouched for.
func (k *KernelEvidence) Unread() (unread, vouched []verdict.KernelHolder) {
	look := k.lastLook()
	still := k.stillUnseen(look.unseen)
	comms := look.unseenComms()
	for i, pid := range look.unseen {
		h := verdict.KernelHolder{Pid: pid, Comm: comms[i]}
		if slices.Contains(still, pid) {
			unread = append(unread, h)
		} else {
			vouched = append(vouched, h)
		}
	}
	return unread, vouched
}

// Unseen returns the processes whose open files the look could not see
// (after a first question: the look is taken then; with Fresh, the last
// question's), and whether it saw all the others: the look was complete
// but for those.
func (k *KernelEvidence) Unseen() (pids []int, others bool) {
	look := k.lastLook()
	return look.unseen, look.complete && k.lockTable().ok
}

// openFiles returns the look at every process's open files to answer a
// question from: taken once per run, or afresh for each question with
// Fresh.
func (k *KernelEvidence) openFiles() *openLook {
	if !k.Fresh {
		k.once.Do(func() { k.look = gatherOpen() })
		return k.look
	}
	look := gatherOpen()
	k.mu.Lock()
	k.look = look
	k.mu.Unlock()
	return look
}

// lastLook returns the look taken for the last question, or takes one if
// none has been asked.
func (k *KernelEvidence) lastLook() *openLook {
	if !k.Fresh {
		return k.openFiles()
	}
	k.mu.Lock()
	look := k.look
	k.mu.Unlock()
	if look == nil {
		look = k.openFiles()
	}
	return look
}

func comm(pid int) string {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// Locks implements LockTable from /proc/locks alone, read once (or on each
// question when Fresh), without the scan of every process's open files
// that Holders makes: it is asked on the break path of every acquirer.
func (k *KernelEvidence) Locks(dev, ino uint64) []verdict.KernelHolder {
	return k.named(k.lockTable().held[devIno{dev, ino}])
}

// Waiters implements verdict.LockDetail: the requests /proc/locks shows
// blocked behind a lock on dev:ino.
func (k *KernelEvidence) Waiters(dev, ino uint64) []verdict.KernelHolder {
	return k.named(k.lockTable().waiting[devIno{dev, ino}])
}

// Cover implements verdict.LockDetail: the table covers a file only when
// it was read through a /proc of the initial pid namespace that is this
// process's own, from that procfs's own locks file, and lists the file
// under a device known to be its: the device of its mount, by
// /proc/self/mountinfo (the superblock's, which the kernel names files by
// in /proc/locks), is the file's st_dev; or, on btrfs, whose subvolumes
// each report a device of their own, that device instead, where every lock
// on the inode is listed, among any of other subvolumes' inodes of the
// same number (Shared: a lock listed is taken as held). Anything else (a
// child namespace's table, which lists only its own processes' locks and
// drops those whose taker has exited, a table that could not be read, one
// that is not procfs's, a file on overlayfs whose st_dev is its layer's,
// or one whose mount cannot be found) is partial, and verdict then asks
// the file itself (FileLocks). dir and name, where not "", find the file's
// mount when info does not say it.
func (k *KernelEvidence) Cover(dir, name string, info fsx.Stat) verdict.TableCover {
	return k.lockTable().cover(dir, name, info)
}

func (k *KernelEvidence) lockTable() lockTable {
	if k.Fresh {
		return readLockTable()
	}
	k.tableOnce.Do(func() { k.table = readLockTable() })
	return k.table
}

// named turns entries of /proc/locks into holders, naming each pid still
// running (Pid 0 for one that is not: its lock is held all the same, by
// whoever has the open file description).
func (k *KernelEvidence) named(ls []procLock) []verdict.KernelHolder {
	probe := k.Probe
	if probe == nil {
		probe = KernelProbe{}
	}
	var hs []verdict.KernelHolder
	for _, l := range ls {
		h := verdict.KernelHolder{How: l.how, Mode: l.mode}
		if l.pid > 0 {
			if p := probe.Probe(l.pid); p.State == verdict.StateRunning {
				h.Pid, h.Comm = l.pid, p.Comm
			}
		}
		hs = append(hs, h)
	}
	return hs
}

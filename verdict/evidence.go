package verdict

import (
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/scan"
)

// KernelHolder is a process that, by the kernel's own tables, holds a file:
// by an advisory lock on it, or by having it open.
type KernelHolder struct {
	Pid  int
	Comm string
	// How is "flock", "POSIX lock", "OFD lock", "lease" or "open".
	How string
	// Mode is "READ" or "WRITE" for an advisory lock, where the kernel says.
	Mode string
}

// Evidence answers, for a lock that carries no usable owner record, who the
// kernel says holds it. It is gathered once per run, and only when some
// lock needs it.
type Evidence interface {
	// Holders returns the running processes that hold the file dev:ino.
	// complete is false when some processes' open files could not be seen
	// (not running as root), so that finding none proves nothing.
	Holders(dev, ino uint64) (hs []KernelHolder, complete bool)
}

// LockTable is Evidence that can say, cheaply, who holds an advisory lock
// (flock, POSIX, OFD, lease) on a file, from the kernel's lock table alone.
// A holder with Pid 0 is a lock whose taker is no longer running (an
// inherited descriptor, an OFD lock): the lock is held all the same, by
// whoever has that open file description.
type LockTable interface {
	Locks(dev, ino uint64) []KernelHolder
}

// ProcDetail is what an operator wants to see of a live holder beyond its
// pid and command name: evidence for a person, never for a verdict.
type ProcDetail struct {
	// Comm is the holder's short command name (/proc/<pid>/status Name).
	Comm string
	// Cmdline is the holder's full command line.
	Cmdline []string
	// Uid and User are who it runs as (User "" when the uid has no name).
	Uid  int
	User string
}

// LockDetail is a LockTable that also names the requests blocked behind a
// lock (lslocks' BLOCKER), and says how far its table covers a file (Cover).
type LockDetail interface {
	Waiters(dev, ino uint64) []KernelHolder
	// Cover says how the table lists the locks on the file name in dir,
	// which was info when judged (dir may be "" where only info is known).
	Cover(dir, name string, info scan.Stat) TableCover
}

// TableCover is what the kernel's lock table can say of one file.
//
// The table is the whole machine's only when read from the initial pid
// namespace, through a /proc of it that is this process's own, from
// procfs's own locks file (in a child pid namespace the kernel lists only
// that namespace's processes' locks; a file mounted over /proc/locks lists
// what it likes). And it names a file by the device of the file system's
// superblock, which is not always the file's st_dev: btrfs gives each
// subvolume a device of its own, and overlayfs gives its layers' files
// theirs. So a file is covered only where the device its mount shows in
// mountinfo is its st_dev; on btrfs the table is looked up by the
// superblock's device instead (Dev), where every lock on the inode is
// listed, but among other subvolumes' inodes of the same number (Shared).
type TableCover struct {
	// Dev is the device the table lists the file's locks under.
	Dev uint64
	// Whole says that every lock on the file is listed under Dev and its
	// inode, so that none listed proves none held.
	Whole bool
	// Shared, where not "", says why a lock listed under Dev and the
	// inode may be another file's: it is taken as the file's (held).
	Shared string
	// Doubt, where not "", says why the table does not cover the file
	// (Whole is false for a reason beyond the table's pid namespace).
	Doubt string
}

// FileLockTest asks the kernel about the advisory locks on one file, through
// a descriptor of its own, which no pid namespace filters: the question the
// judge asks where the kernel's lock table could not be read, or lists only
// some namespaces' locks, or does not cover the file (TableCover.Whole is
// false).
type FileLockTest interface {
	// FileLocked reports whether some open file description holds an
	// advisory lock (flock, POSIX or OFD) on the entry name in the
	// directory dir, which must still be the file or directory dev:ino.
	// how says in words what was found: how it is held, or how it was
	// found free. known is false when the kernel's answer could not be
	// had (the entry changed or could not be opened, a call failed, or a
	// flock could not be seen without taking it): then held is false and
	// proves nothing.
	FileLocked(dir, name string, dev, ino uint64) (held bool, how string, known bool)
}

// RepoWitness is Evidence that can say which running git processes work in
// a repository, named by the device and inode of its common git directory:
// git records no holder in its lock files, and keeps none of them open
// while, say, a commit waits in its editor. complete is false when not
// every process could be seen, or a git process's working directory or
// environment could not be read.
type RepoWitness interface {
	GitWorkers(dev, ino uint64) (hs []KernelHolder, complete bool)
}

// ShmWitness is Evidence that can say whether a System V shared memory
// segment is still attached by some process: PostgreSQL's own test of a
// cluster whose postmaster is gone (orphan backends keep its segment).
// known is false when the segment could not be examined, or may live in an
// IPC namespace this reader does not see. dataDir is the cluster's data
// directory, which PostgreSQL's segment header names (by device and
// inode): only that proves an attached segment another's.
type ShmWitness interface {
	ShmInUse(key, id uint64, dataDir string) (inUse, known bool)
}

// AddrWitness is Evidence that can say whether an IP address is this
// machine's (Firefox names the host of its lock by address).
type AddrWitness interface {
	IsLocalAddr(ip string) bool
}

// LocksOnly is kernel evidence cut down to its lock table, for a judge that
// only ever acts on gone locks (lockctl acquire): it answers Locks, and says
// of every other question that it did not look, so that an owner-less lock
// costs no scan of every process's open files, and no before-boot record is
// ever taken for gone on its word.
type LocksOnly struct{ Evidence }

// Holders implements Evidence: nothing looked at, so nothing proved.
func (LocksOnly) Holders(dev, ino uint64) ([]KernelHolder, bool) { return nil, false }

// Locks implements LockTable, where the evidence underneath can.
func (l LocksOnly) Locks(dev, ino uint64) []KernelHolder {
	if t, ok := l.Evidence.(LockTable); ok {
		return t.Locks(dev, ino)
	}
	return nil
}

// Waiters implements LockDetail, where the evidence underneath can.
func (l LocksOnly) Waiters(dev, ino uint64) []KernelHolder {
	if t, ok := l.Evidence.(LockDetail); ok {
		return t.Waiters(dev, ino)
	}
	return nil
}

// Cover implements LockDetail: not whole where the evidence underneath
// cannot say.
func (l LocksOnly) Cover(dir, name string, info scan.Stat) TableCover {
	if t, ok := l.Evidence.(LockDetail); ok {
		return t.Cover(dir, name, info)
	}
	return TableCover{Dev: info.Dev}
}

// ScopeWitness is Evidence that can also say whether a generation B scope
// is that of a pid namespace existing now, in this boot: the digest of a
// namespace's machine id, this boot id and the namespace. The before-boot
// rule fires only on its word that no such namespace has the scope, so a
// record of this boot cannot read gone on the strength of a clock that was
// wrong when it was written.
type ScopeWitness interface {
	// ScopeInUse reports whether scope is the digest of some pid namespace
	// that exists now, on host h in this boot; complete is false when not
	// every namespace, or its machine id, could be seen.
	ScopeInUse(scope string, h Host) (used, complete bool)
}

// Seen says how far kernel evidence was looked for, for a lock without a
// usable owner record.
type Seen int

// How far kernel evidence was looked for.
const (
	SeenNothing  Seen = iota // not looked for (no Evidence, or not needed)
	SeenPartial              // looked, found no holder, but could not see every process
	SeenComplete             // looked at every process: no holder
)

// Unread is Evidence that names the processes whose open files its look
// could not read, and apart from them those an operator vouched hold none
// of the locks asked about (doctor --not-a-holder), which then leave the
// look complete.
type Unread interface {
	Unread() (unread, vouched []KernelHolder)
}

// names says a few processes in words: "pid 1 (init), pid 7 (x) and 3 more".
func names(hs []KernelHolder) string {
	var b []string
	for i, h := range hs {
		if i == 3 {
			b = append(b, fmt.Sprintf("%d more", len(hs)-i))
			break
		}
		b = append(b, fmt.Sprintf("pid %d (%s)", h.Pid, h.Comm))
	}
	if len(b) > 1 {
		return strings.Join(b[:len(b)-1], ", ") + " and " + b[len(b)-1]
	}
	return strings.Join(b, "")
}

//go:build linux

// The kernel's lock table: /proc/locks read (readLockTable, parseProcLock),
// whether it is every process's (locksTrust), and whether it covers a
// given file (cover, mountOf).

package kernel

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

type procLock struct {
	pid     int
	how     string
	mode    string // "READ" or "WRITE"
	waiting bool   // blocked waiting for the lock, not holding it
}

// lockTable is /proc/locks, indexed by device and inode: the locks held,
// and the requests blocked behind them. ok is false when it could not be
// read; whole, when it is every process's on this machine: read from the
// initial pid namespace through a /proc of it (in a child namespace the
// kernel lists only the locks of that namespace's processes), from
// procfs's own locks file of that /proc (not a file mounted over it).
// doubt says why a table read is not whole, where that is not its pid
// namespace's; mountinfo is /proc/self/mountinfo read with it, which says
// under which device the table lists each mount's files (cover).
type lockTable struct {
	held, waiting map[devIno][]procLock
	ok, whole     bool
	doubt         string
	mountinfo     string
	mounts        map[uint64]mountEntry // mountinfo by mount id, where indexed
}

// mount finds the mount whose id is id, in the index where there is one.
func (t lockTable) mount(id uint64) (mountEntry, bool) {
	if t.mounts != nil {
		m, ok := t.mounts[id]
		return m, ok
	}
	return mountByID(t.mountinfo, id)
}

// readLockTable reads /proc/locks.
func readLockTable() lockTable {
	t := lockTable{held: map[devIno][]procLock{}, waiting: map[devIno][]procLock{}}
	if procOurs() != nil {
		return t
	}
	f, err := os.Open(locksPath)
	if err != nil {
		return t
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if key, l, ok := parseProcLock(sc.Text()); ok && l.waiting {
			t.waiting[key] = append(t.waiting[key], l)
		} else if ok {
			t.held[key] = append(t.held[key], l)
		}
	}
	if sc.Err() != nil {
		return t
	}
	t.ok = true
	// The kernel lists the locks of the pid namespace of the /proc read
	// from, not of the reader's. procOurs (above) proved this /proc is this
	// process's own namespace's, read through that same /proc: so its
	// ns/pid names the /proc's namespace, and the table is whole only when
	// that is the initial one.
	ns, err := os.Readlink("/proc/self/ns/pid")
	t.whole = err == nil && ns == initialPidNS
	if !t.whole {
		return t
	}
	// And only when the file read is that /proc's locks, not a file
	// mounted over /proc/locks (an empty one, or a child namespace's
	// procfs's locks, which lists only that namespace's).
	mi, err := readFile("/proc/self/mountinfo")
	if err != nil {
		t.whole = false
		t.doubt = fmt.Sprintf("whether /proc/locks is the kernel's lock table cannot be told (%v), so a lock it does not list may be held", errors.Unwrap(err))
		return t
	}
	t.mountinfo, t.mounts = string(mi), mountsByID(string(mi))
	if err := locksTrust(f, mi); err != nil {
		t.whole = false
		t.doubt = fmt.Sprintf("the lock table read here is not the kernel's whole one (%v), so a lock it does not list may be held", err)
	}
	return t
}

// locksPath is the kernel's lock table.
const locksPath = "/proc/locks"

// locksTrust says why the file f, opened at /proc/locks, is not the lock
// table of the /proc that procOurs checked, or nil when it is: it is on
// procfs, read through the procfs mount on /proc whose root is procfs's
// root (procFileTrust, as for the boot id), and that procfs is the one
// /proc/self is on (the same device).
func locksTrust(f *os.File, mountinfo []byte) error {
	var m mountEntry
	var err error
	var st unix.Stat_t
	werr := fsx.WithFd(f, func(fd int) error {
		if m, err = procFileTrust(fd, locksPath, "/locks", "the kernel's lock table", mountinfo); err != nil {
			return nil
		}
		return unix.Fstat(fd, &st)
	})
	switch {
	case err != nil:
		return err
	case werr != nil:
		return fmt.Errorf("cannot stat %s: %v", locksPath, werr)
	case m.root != "/" || m.point != "/proc":
		return fmt.Errorf("%s is procfs's %s, mounted on %s, not read through the /proc mount itself", locksPath, m.root, m.point)
	}
	var self unix.Stat_t
	if err := unix.Lstat("/proc/self", &self); err != nil {
		return fmt.Errorf("cannot stat /proc/self: %v", err)
	}
	if self.Dev != st.Dev || m.dev != st.Dev {
		return fmt.Errorf("%s is another procfs's than the one /proc/self is on", locksPath)
	}
	return nil
}

func (t lockTable) cover(dir, name string, info fsx.Stat) verdict.TableCover {
	c := verdict.TableCover{Dev: info.Dev}
	if !t.ok || !t.whole {
		c.Doubt = t.doubt
		return c
	}
	var id uint64
	if info.HasMount {
		id = info.Mount
	}
	if id == 0 && dir != "" {
		id = mountOf(dir, name, info)
	}
	// Named only in a doubt: formatting it for every lock was a
	// fiftieth of a 20,000-lock doctor's allocations.
	devText := func() string { return fmt.Sprintf("%d:%d", unix.Major(info.Dev), unix.Minor(info.Dev)) }
	if id == 0 {
		c.Doubt = fmt.Sprintf("which mount the file is on could not be told, so whether the kernel's lock table lists it under its device (%s) cannot be told, and a lock it does not list may be held", devText())
		return c
	}
	m, ok := t.mount(id)
	switch {
	case !ok:
		c.Doubt = fmt.Sprintf("the mount the file is on (id %d) is not in /proc/self/mountinfo, so whether the kernel's lock table lists it under its device (%s) cannot be told, and a lock it does not list may be held", id, devText())
		return c
	case m.dev == info.Dev:
	case m.fstype == "btrfs":
		c.Dev = m.dev
	default:
		c.Doubt = fmt.Sprintf("the kernel's lock table names a file by its file system's device (%d:%d, the %s mount on %s), and this file reports another (%s, as overlayfs gives its layers' files), so a lock on it may be listed under a device not known here", unix.Major(m.dev), unix.Minor(m.dev), m.fstype, m.point, devText())
		return c
	}
	c.Whole = true
	if m.fstype == "btrfs" {
		c.Shared = "on btrfs the kernel's lock table lists the inodes of every subvolume under one device, so this may be another subvolume's file with the same inode number: taken as held"
	}
	return c
}

// mountOf is the id of the mount the file name in dir is on, if it is
// still the file info describes (0 where that cannot be told). It never
// follows a symbolic link.
func mountOf(dir, name string, info fsx.Stat) uint64 {
	d, err := fsx.OpenDir(dir)
	if err != nil {
		return 0
	}
	defer d.Close()
	st, err := d.Lstat(name)
	if err != nil || !st.SameFile(info) || !st.HasMount {
		return 0
	}
	return st.Mount
}

// parseProcLock parses one line of /proc/locks:
//
//	1: FLOCK  ADVISORY  WRITE 812 08:02:1234 0 EOF
//	2: OFDLCK ADVISORY  READ  -1 00:2a:99 0 EOF
//	3: -> FLOCK ADVISORY WRITE 813 08:02:1234 0 EOF   (blocked behind 1)
func parseProcLock(line string) (devIno, procLock, bool) {
	f := strings.Fields(line)
	waiting := len(f) > 1 && f[1] == "->"
	if waiting {
		f = f[1:]
	}
	if len(f) < 6 {
		return devIno{}, procLock{}, false
	}
	how := map[string]string{"FLOCK": "flock", "POSIX": "POSIX lock", "OFDLCK": "OFD lock", "LEASE": "lease", "DELEG": "lease"}[f[1]]
	if how == "" {
		return devIno{}, procLock{}, false
	}
	mode := f[3]
	if mode != "READ" && mode != "WRITE" {
		mode = "" // a lease's BREAKING, UNLCK, ...
	}
	pid, err := strconv.Atoi(f[4])
	if err != nil {
		return devIno{}, procLock{}, false
	}
	parts := strings.Split(f[5], ":")
	if len(parts) != 3 {
		return devIno{}, procLock{}, false
	}
	maj, err1 := strconv.ParseUint(parts[0], 16, 32)
	min, err2 := strconv.ParseUint(parts[1], 16, 32)
	ino, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return devIno{}, procLock{}, false
	}
	return devIno{unix.Mkdev(uint32(maj), uint32(min)), ino}, procLock{pid: pid, how: how, mode: mode, waiting: waiting}, true
}

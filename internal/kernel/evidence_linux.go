//go:build linux

package kernel

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
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

// ScopeInUse implements ScopeWitness. It reads /proc/*/ns/pid once, and the
// machine id under each process's root (once per root), as a writer there
// would have read it.
func (k *KernelEvidence) ScopeInUse(scope string, h verdict.Host) (bool, bool) {
	k.scopesOnce.Do(func() {
		// A process's root may be a hung FUSE or NFS mount: the look gets
		// a deadline, past which it is incomplete. (The goroutine left
		// waiting is killed with the process.)
		type answer struct {
			scopes   map[string]bool
			complete bool
		}
		done := make(chan answer, 1)
		go func() {
			s, c := nsScopes(h)
			done <- answer{s, c}
		}()
		select {
		case a := <-done:
			k.scopes, k.scopesComplete = a.scopes, a.complete
		case <-time.After(scopeDeadline):
			k.scopes, k.scopesComplete = map[string]bool{}, false
		}
	})
	return k.scopes[scope], k.scopesComplete
}

// scopeDeadline bounds the look at every process's machine id.
const scopeDeadline = 3 * time.Second

func nsScopes(h verdict.Host) (map[string]bool, bool) {
	scopes := map[string]bool{}
	if h.BootID == "" || procOurs() != nil {
		return scopes, false
	}
	complete := true
	if procHidesSome() {
		complete = false
	}
	own, err := os.Readlink("/proc/self/ns/pid")
	if err != nil || own != initialPidNS {
		complete = false // other namespaces are out of sight
	}
	if h.MachineID != "" && own != "" {
		scopes[verdict.ScopeDigest(h.MachineID, h.BootID, own)] = true
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return scopes, false
	}
	ids := map[rootKey]string{}     // machine id under each root read
	bootIDs := map[rootKey]string{} // boot id under each root read
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		ns, err := os.Readlink("/proc/" + e.Name() + "/ns/pid")
		switch {
		case err == nil:
		case os.IsNotExist(err) || errors.Is(err, unix.ESRCH):
			continue // exited
		case ownNS(e.Name()):
			// Its namespace link may not be read, but its status says it
			// has a pid in no namespace below this one.
			ns = own
		default:
			complete = false
			continue
		}
		// The boot id it would hash is the one under its root too: a file
		// mounted over the kernel's there (a sandbox's) is hashed as read.
		boots := []string{h.BootID}
		switch b, err := bootIDIn(e.Name(), bootIDs); {
		case err == nil:
			boots = append(boots, b)
		case os.IsNotExist(err) || errors.Is(err, unix.ESRCH):
		default:
			complete = false
		}
		for _, boot := range boots {
			if h.MachineID != "" {
				scopes[verdict.ScopeDigest(h.MachineID, boot, ns)] = true
			}
		}
		// The machine id the process would hash is the one under its root.
		id, err := machineIDIn(e.Name(), ids)
		switch {
		case err == nil:
			for _, boot := range boots {
				scopes[verdict.ScopeDigest(id, boot, ns)] = true
			}
		case os.IsNotExist(err) || errors.Is(err, unix.ESRCH):
			// None there (or it exited): nothing it writes carries a scope.
		default:
			// A root this process may not look into (another namespace's,
			// or a more privileged process's of this one, such as a
			// sandbox's pid 1): a writer there may use a machine id never
			// seen here.
			complete = false
		}
	}
	return scopes, complete
}

type devIno struct{ dev, ino uint64 }

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
	for _, pid := range look.open[key] {
		if !seen[pid] {
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
	return hs, look.complete && t.ok && len(look.unseen) == 0
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

// openLook is one look at every process's open files: which processes have
// each file open; whether every process was seen, or could have been
// (complete); and the processes whose open files were not seen.
type openLook struct {
	open     map[devIno][]int
	complete bool
	unseen   []int
}

// gatherOpen looks at every process's open files: every descriptor table
// of every process (a thread may have one of its own).
func gatherOpen() *openLook {
	k := &openLook{open: map[devIno][]int{}}
	if procOurs() != nil {
		// Its pids, /proc/locks' included, are another namespace's.
		return k
	}
	k.complete = true
	if procHidesSome() {
		k.complete = false
	}
	// In a pid namespace other than the initial one (a container), /proc
	// and /proc/locks show only this namespace's processes: a holder
	// outside it is invisible, so no answer here can be complete.
	if ns, err := os.Readlink("/proc/self/ns/pid"); err != nil || ns != initialPidNS {
		k.complete = false
	}
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		k.complete = false
		return k
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != self {
			pids = append(pids, pid)
		}
	}
	// Every process's descriptors, on every CPU: with thousands of
	// processes this look was most of a doctor run (issue 19). Each worker
	// indexes its own share; the shares are merged, in pid order, after.
	workers := max(1, min(runtime.GOMAXPROCS(0), len(pids)/64))
	scans := make([]fdScan, workers)
	unseen := make([][]int, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range scans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &scans[w]
			s.open = map[devIno][]int{}
			for {
				i := int(next.Add(1)) - 1
				if i >= len(pids) {
					return
				}
				if !s.scanFds(pids[i]) {
					unseen[w] = append(unseen[w], pids[i])
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range scans {
		for key, ps := range s.open {
			k.open[key] = append(k.open[key], ps...)
		}
	}
	if workers > 1 {
		for _, ps := range k.open {
			slices.Sort(ps)
		}
	}
	for _, u := range unseen {
		k.unseen = append(k.unseen, u...)
	}
	slices.Sort(k.unseen)
	return k
}

// fdScan indexes which processes have which files open: one worker's
// share of the look at every process's descriptors.
type fdScan struct {
	open map[devIno][]int
}

// openProcDir opens a /proc directory of descriptors without os.Open's
// attempt to add it to the poller (a wasted system call for every
// process).
func openProcDir(dir string) (*os.File, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		switch err {
		case nil:
			return os.NewFile(uintptr(fd), dir), nil
		case unix.EINTR:
			continue
		}
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
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
	devText := fmt.Sprintf("%d:%d", unix.Major(info.Dev), unix.Minor(info.Dev))
	if id == 0 {
		c.Doubt = fmt.Sprintf("which mount the file is on could not be told, so whether the kernel's lock table lists it under its device (%s) cannot be told, and a lock it does not list may be held", devText)
		return c
	}
	m, ok := t.mount(id)
	switch {
	case !ok:
		c.Doubt = fmt.Sprintf("the mount the file is on (id %d) is not in /proc/self/mountinfo, so whether the kernel's lock table lists it under its device (%s) cannot be told, and a lock it does not list may be held", id, devText)
		return c
	case m.dev == info.Dev:
	case m.fstype == "btrfs":
		c.Dev = m.dev
	default:
		c.Doubt = fmt.Sprintf("the kernel's lock table names a file by its file system's device (%d:%d, the %s mount on %s), and this file reports another (%s, as overlayfs gives its layers' files), so a lock on it may be listed under a device not known here", unix.Major(m.dev), unix.Minor(m.dev), m.fstype, m.point, devText)
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

// initialPidNS is the initial pid namespace (PROC_PID_INIT_INO).
const initialPidNS = "pid:[4026531836]"

// scanFds indexes the files pid has open, in every descriptor table of its
// threads: a thread may have a table of its own (clone without CLONE_FILES,
// unshare(CLONE_FILES)), which /proc/<pid>/fd, the leader's, does not show.
// It returns false when they could not all be seen (not for a process that
// has simply exited). Threads come and go while that is done: a look that
// lost a thread before it could tell its table is taken again, for up to
// about 60ms (a process tearing down a large heap as it exits has threads
// exiting for that long), before the process is called unseen.
func (k *fdScan) scanFds(pid int) bool { return retryTables(pid, k.scanTables) }

// retryTables is scanFds's loop around one attempt, try: a process whose
// tables were lost to thread churn on every attempt is unseen unless it
// has exited.
func retryTables(pid int, try func(pid int) (seen, again bool)) bool {
	for attempt := 0; ; attempt++ {
		seen, again := try(pid)
		if !again {
			return seen
		}
		if attempt == 7 {
			return exited(pid)
		}
		time.Sleep(min(time.Millisecond<<attempt, 16*time.Millisecond))
	}
}

// scanTables is one attempt of scanFds: the leader's table, then that of
// each other thread that does not share a table already read. again is
// true when a thread went before its table could be told, or when no table
// could be read (the leader has exited, and so had every thread looked at).
func (k *fdScan) scanTables(pid int) (seen, again bool) {
	p := strconv.Itoa(pid)
	f, err := openProcDir("/proc/" + p + "/fd")
	if err != nil {
		// Exited (or exiting) while being read: it holds nothing. Any
		// other refusal leaves it unseen.
		return os.IsNotExist(err) || exited(pid), false
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		f.Close()
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) || exited(pid), false
	}
	// A descriptor that could not be followed (EACCES: a process more
	// privileged than this one, or no CAP_SYS_PTRACE) may be the very
	// lock, so the look is incomplete, unless the process has exited.
	_, unseen := k.index(pid, f, names)
	f.Close()
	if unseen > 0 {
		return exited(pid), false
	}
	// read: the threads whose tables were read in full. The leader's is,
	// unless the leader has exited: its table then shows nothing, while
	// its other threads, which may share it, hold their files open.
	b, err := readFile("/proc/" + p + "/stat")
	if err != nil {
		return os.IsNotExist(err) || errors.Is(err, unix.ESRCH), false
	}
	state, _, _, err := ParseStat(b)
	switch {
	case err != nil:
		return false, false
	case statExited(b, state):
		return true, false // exited: it holds nothing
	}
	var read []int
	if len(names) > 0 || state != 'Z' && state != 'X' && state != 'x' {
		read = append(read, pid)
		// A single thread (field 20, num_threads): the leader's table,
		// read above, is its only one. (A thread started since opened
		// its files after this look began, as a process started since
		// would have.)
		if n, ok := statField(b, 20); ok && n == "1" {
			return true, false
		}
	}
	// Every other thread: one that shares a table read (kcmp says so) is
	// seen; any other's table is read.
	t, err := openProcDir("/proc/" + p + "/task")
	if err != nil {
		return os.IsNotExist(err) || exited(pid), false
	}
	tids, err := t.Readdirnames(-1)
	t.Close()
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) || exited(pid), false
	}
	// The listing may leave out a thread while others exit (the kernel
	// walks the thread list from one listed to the next). The count
	// taken after it says so: a thread left out that is still there is
	// counted. (A thread listed that has gone since is found gone below.)
	if b, err := readFile("/proc/" + p + "/stat"); err != nil {
		return os.IsNotExist(err) || errors.Is(err, unix.ESRCH), false
	} else if n, ok := statField(b, 20); !ok || !listedAll(tids, n) {
		return false, true
	}
	lost := false
	for _, name := range tids {
		tid, err := strconv.Atoi(name)
		if err != nil || tid == pid {
			continue
		}
		if sharesTable(tid, read) {
			continue
		}
		switch got, ok := k.scanThread(pid, p, name); {
		case !ok:
			return exited(pid), false
		case got:
			read = append(read, tid)
		default:
			lost = true
		}
	}
	if lost || len(read) == 0 {
		return false, true
	}
	return true, false
}

// sharesTable reports whether thread tid has the descriptor table of one
// of the threads read, by kcmp(KCMP_FILES). When kcmp cannot tell (the
// thread or the one read has exited; a kernel without kcmp; kcmp refused
// by a seccomp filter or for want of ptrace access), it says no, and the
// thread's table is read, which is refused where kcmp was for access.
func sharesTable(tid int, read []int) bool {
	for _, r := range read {
		if same, err := sameFiles(r, tid); err == nil && same {
			return true
		}
	}
	return false
}

// listedAll reports whether tids, a listing of /proc/<pid>/task, has at
// least n (field 20 of /proc/<pid>/stat, num_threads) threads.
func listedAll(tids []string, n string) bool {
	want, err := strconv.Atoi(n)
	return err == nil && len(tids) >= want
}

// kcmpFiles is KCMP_FILES (linux/kcmp.h).
const kcmpFiles = 2

// sameFiles reports whether tasks a and b share one descriptor table.
func sameFiles(a, b int) (bool, error) {
	for {
		r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), kcmpFiles, 0, 0, 0)
		switch e {
		case 0:
			return r == 0, nil
		case unix.EINTR:
			continue
		}
		return false, e
	}
}

// scanThread indexes the files in the descriptor table of thread tid
// (named name) of pid (named p), through /proc/<pid>/task/<tid>/fd. read
// says whether the table was read as it is: the thread was not yet exiting
// once it had been read (an exiting thread lets go of its table, and shows
// none, while a thread it started may hold it on); a descriptor it closed
// meanwhile is no loss. ok is false when the table could not be read.
func (k *fdScan) scanThread(pid int, p, name string) (read, ok bool) {
	dir := "/proc/" + p + "/task/" + name
	f, err := openProcDir(dir + "/fd")
	if err != nil {
		return false, os.IsNotExist(err) || errors.Is(err, unix.ESRCH)
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		f.Close()
		return false, errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
	}
	_, unseen := k.index(pid, f, names)
	f.Close()
	if unseen > 0 {
		return false, false
	}
	// PF_EXITING is set before the thread lets go of its table: if it is
	// not set now, the table read was the thread's own.
	b, err := readFile(dir + "/stat")
	if err != nil {
		return false, os.IsNotExist(err) || errors.Is(err, unix.ESRCH)
	}
	flags, ok := statField(b, 9)
	if !ok {
		return false, false
	}
	n, err := strconv.ParseUint(flags, 10, 64)
	if err != nil {
		return false, false
	}
	return n&pfExiting == 0, true
}

// pfExiting is PF_EXITING (linux/sched.h), in field 9 (flags) of
// /proc/<pid>/task/<tid>/stat: the thread is exiting.
const pfExiting = 0x4

// index records pid as holding each file open in the fd directory f, whose
// entries are names. It counts the descriptors it followed, and those it
// could not follow for any reason but their having been closed since.
func (k *fdScan) index(pid int, f *os.File, names []string) (count, unseen int) {
	fd := int(f.Fd())
	for _, n := range names {
		var st unix.Statx_t
		// The fd entries are magic links: statx follows them to the file.
		// AT_STATX_DONT_SYNC keeps a hung NFS server from stalling the
		// scan (a hung FUSE server still can).
		if err := unix.Statx(fd, n, unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &st); err != nil {
			if err != unix.ENOENT && err != unix.ESRCH {
				unseen++
			}
			continue
		}
		key := devIno{unix.Mkdev(st.Dev_major, st.Dev_minor), st.Ino}
		count++
		if l := k.open[key]; len(l) == 0 || l[len(l)-1] != pid {
			k.open[key] = append(l, pid)
		}
	}
	return count, unseen
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

// exited reports whether pid has gone, or is a zombie or dead: a process
// in that state has closed every file it had, so it holds nothing.
func exited(pid int) bool {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err) || errors.Is(err, unix.ESRCH)
	}
	state, _, _, err := ParseStat(b)
	return err == nil && statExited(b, state)
}

// procHidesSome reports whether the /proc here leaves processes out of its
// listing (hidepid, subset), or whether that cannot be told.
func procHidesSome() bool {
	b, err := readFile("/proc/self/mountinfo")
	return err != nil || procHides(string(b))
}

// procHides reports whether the /proc mounted on top at /proc, according to
// mountinfo, leaves processes out of its listing: hidepid (other than 0 or
// off) or subset. A reader then cannot know it has seen every process.
func procHides(mountinfo string) bool {
	hides := false
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 || f[4] != "/proc" {
			continue
		}
		g := strings.Fields(post)
		if len(g) < 3 {
			hides = true // cannot tell
			continue
		}
		hides = false // the last mount on /proc is the one seen
		for _, o := range strings.Split(g[2], ",") {
			k, v, _ := strings.Cut(o, "=")
			if k == "subset" || k == "hidepid" && v != "0" && v != "off" {
				hides = true
			}
		}
	}
	return hides
}

// ownNS reports whether process pid is in the pid namespace of this /proc,
// by the NSpid line of its status (readable where ns/pid is not): one pid
// there means no namespace below this one.
func ownNS(pid string) bool {
	b, err := readFile("/proc/" + pid + "/status")
	if err != nil {
		return false
	}
	return len(nsPids(string(b))) == 1
}

// rootKey names a process's root: the mount it is on, and its directory.
type rootKey struct {
	mnt, dev, ino uint64
}

// machineIDIn reads the first line of etc/machine-id under the root of
// process pid, as that process would: resolved inside its root
// (RESOLVE_IN_ROOT, so an absolute link there means its root, not this
// one's), never through a magic link, without blocking on a FIFO or a
// device, and at most 64 bytes of a regular file. ids remembers the id
// under each root already read, so that each is read once. A root is its
// mount (each mount namespace has its own, so a file mounted over
// /etc/machine-id in one is seen there) and its directory (a chroot); where
// the kernel gives no mount id, nothing is remembered.
func machineIDIn(pid string, ids map[rootKey]string) (string, error) {
	return firstLineIn(pid, "etc/machine-id", ids)
}

// firstLineIn reads the first line of the file rel under the root of
// process pid, as that process would (machineIDIn's rules), remembering it
// in cache by root. A file that is not there, or is empty, gives
// fs.ErrNotExist; one that is not a regular file, an error.
func firstLineIn(pid, rel string, cache map[rootKey]string) (string, error) {
	rfd, err := unix.Open("/proc/"+pid+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(rfd)
	var stx unix.Statx_t
	if err := unix.Statx(rfd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_INO|unix.STATX_MNT_ID, &stx); err != nil {
		return "", err
	}
	root := rootKey{stx.Mnt_id, unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		root = rootKey{} // no mount id: read every time
	}
	if line, ok := cache[root]; ok && root != (rootKey{}) {
		if line == "" {
			return "", fs.ErrNotExist
		}
		return line, nil
	}
	fd, err := unix.Openat2(rfd, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == unix.ENOENT || err == unix.ENOTDIR {
		remember(cache, root, "")
		return "", fs.ErrNotExist
	}
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", fmt.Errorf("/proc/%s/root/%s is not a regular file", pid, rel)
	}
	buf := make([]byte, 64)
	n, err := retryFd(func() (int, error) { return unix.Read(fd, buf) })
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	if line = strings.TrimSpace(line); line == "" {
		remember(cache, root, "")
		return "", fs.ErrNotExist // empty: nothing from there (no scope)
	}
	remember(cache, root, line)
	return line, nil
}

func remember(ids map[rootKey]string, root rootKey, id string) {
	if root != (rootKey{}) {
		ids[root] = id
	}
}

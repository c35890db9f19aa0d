//go:build linux

// Every process's open files: each descriptor table of each thread
// (gatherOpen, fdScan), read again while threads come and go (scanFds).

package kernel

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// openLook is one look at every process's open files: which processes have
// each file open; whether every process was seen, or could have been
// (complete); and the processes whose open files were not seen.
type openLook struct {
	open     map[devIno][]int
	complete bool
	unseen   []int

	// The command names of unseen, read once for every lock that names
	// them (an owner-less lock's note: "pid 1 (process_api)").
	commsOnce sync.Once
	comms     []string
}

// unseenComms are the command names of the processes not seen, in the
// order of unseen, read the first time they are asked for.
func (k *openLook) unseenComms() []string {
	k.commsOnce.Do(func() {
		k.comms = make([]string, len(k.unseen))
		for i, pid := range k.unseen {
			k.comms[i] = comm(pid)
		}
	})
	return k.comms
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
	buf  []byte // getdents's, for every directory this worker reads
}

// procDir is an open /proc directory of descriptors or threads. It is no
// os.File: that cost a system call for every process (os.NewFile asks
// whether the descriptor blocks, os.Open tries to add it to the poller)
// and a buffer of its own for every directory read.
type procDir int

func openProcDir(dir string) (procDir, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		switch err {
		case nil:
			return procDir(fd), nil
		case unix.EINTR:
			continue
		}
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
}

// names lists the directory (but . and ..) through k's buffer.
func (k *fdScan) names(d procDir) ([]string, error) {
	if k.buf == nil {
		k.buf = make([]byte, 8<<10)
	}
	var names []string
	for {
		n, err := unix.Getdents(int(d), k.buf)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, err
		case n <= 0:
			return names, nil
		}
		_, _, names = syscall.ParseDirent(k.buf[:n], -1, names)
	}
}

func (d procDir) close() { unix.Close(int(d)) }

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
	names, seen, done := k.scanLeader(pid, p)
	if done {
		return seen, false
	}
	if len(names) > 0 && singleThreaded(p) {
		// The leader's table, read above with files in it, was not let
		// go of, and it is the process's only one.
		return true, false
	}
	read, seen, done := leaderRead(pid, p, names)
	if done {
		return seen, false
	}
	return k.scanOthers(pid, p, read)
}

// singleThreaded says the process named p has one thread, by the link
// count of /proc/<p>/task: procfs makes it 2 plus the thread count
// (fs/proc/base.c, proc_task_getattr; /proc/<pid>/stat's field 20 is the
// same count), one statx instead of reading and parsing the stat file. A
// count that cannot be read says no: the caller then reads the stat file.
func singleThreaded(p string) bool {
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, "/proc/"+p+"/task", 0, unix.STATX_NLINK, &st)
	return err == nil && st.Mask&unix.STATX_NLINK != 0 && st.Nlink == 3
}

// scanLeader reads the leader's table (/proc/<pid>/fd) and returns its
// names. done is true when that settles the attempt, with seen its answer.
func (k *fdScan) scanLeader(pid int, p string) (names []string, seen, done bool) {
	f, err := openProcDir("/proc/" + p + "/fd")
	if err != nil {
		// Exited (or exiting) while being read: it holds nothing. Any
		// other refusal leaves it unseen.
		return nil, os.IsNotExist(err) || exited(pid), true
	}
	names, err = k.names(f)
	if err != nil {
		f.close()
		return nil, errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) || exited(pid), true
	}
	// A descriptor that could not be followed (EACCES: a process more
	// privileged than this one, or no CAP_SYS_PTRACE) may be the very
	// lock, so the look is incomplete, unless the process has exited.
	_, unseen := k.index(pid, f, names)
	f.close()
	if unseen > 0 {
		return nil, exited(pid), true
	}
	return names, false, false
}

// leaderRead starts read, the threads whose tables were read in full,
// from the leader's stat: the leader's is, unless the leader has exited:
// its table (names) then shows nothing, while its other threads, which
// may share it, hold their files open. done is true when that settles the
// attempt, with seen its answer.
func leaderRead(pid int, p string, names []string) (read []int, seen, done bool) {
	b, err := readFile("/proc/" + p + "/stat")
	if err != nil {
		return nil, os.IsNotExist(err) || errors.Is(err, unix.ESRCH), true
	}
	state, _, _, err := ParseStat(b)
	switch {
	case err != nil:
		return nil, false, true
	case statExited(b, state):
		return nil, true, true // exited: it holds nothing
	}
	if len(names) > 0 || state != 'Z' && state != 'X' && state != 'x' {
		read = append(read, pid)
		// A single thread (field 20, num_threads): the leader's table,
		// read above, is its only one. (A thread started since opened
		// its files after this look began, as a process started since
		// would have.)
		if n, ok := statField(b, 20); ok && n == "1" {
			return read, true, true
		}
	}
	return read, false, false
}

// scanOthers is the rest of scanTables, after the leader: every other
// thread that shares a table read (kcmp says so) is seen; any other's
// table is read.
func (k *fdScan) scanOthers(pid int, p string, read []int) (seen, again bool) {
	t, err := openProcDir("/proc/" + p + "/task")
	if err != nil {
		return os.IsNotExist(err) || exited(pid), false
	}
	tids, err := k.names(t)
	t.close()
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) || exited(pid), false
	}
	// The listing may leave out a thread while others exit (the kernel
	// walks the thread list from one listed to the next). The count
	// taken after it says so: a thread left out that is still there is
	// counted. (A thread listed that has gone since is found gone below.)
	if b, err := readFile("/proc/" + p + "/stat"); err != nil {
		return os.IsNotExist(err) || errors.Is(err, unix.ESRCH), false
	} else if !listedAll(tids, b) {
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
// least as many threads as stat, the process's /proc/<pid>/stat read
// after it, counts (field 20, num_threads). A count that cannot be read
// is not met.
func listedAll(tids []string, stat []byte) bool {
	n, ok := statField(stat, 20)
	if !ok {
		return false
	}
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
	names, err := k.names(f)
	if err != nil {
		f.close()
		return false, errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
	}
	_, unseen := k.index(pid, f, names)
	f.close()
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
func (k *fdScan) index(pid int, f procDir, names []string) (count, unseen int) {
	fd := int(f)
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

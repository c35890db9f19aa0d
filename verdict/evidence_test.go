package verdict

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
)

// Tables for issue 7: kernel evidence for owner-less locks, records from
// before this boot, and network file systems. The kernel's tables sit
// behind a fake Evidence here; evidence_linux_test.go asks the real ones.

// The device and inodes the fake kernel knows about.
const (
	evDev       = 0xfd01 // 253:1
	lockIno     = 1001   // the lock file or directory
	holderIno   = 1002   // a generation A holder record beside it
	strangerIno = 1003   // some other file
)

// fakeEvidence answers from a map keyed by device and inode, and remembers
// what it was asked.
// scopeWitness is a kernel that holds no lock on anything, and says whether
// a scope is one of a pid namespace of this boot.
type scopeWitness struct{ used, complete bool }

func (w scopeWitness) Holders(dev, ino uint64) ([]KernelHolder, bool) { return nil, w.complete }
func (w scopeWitness) ScopeInUse(string, Host) (bool, bool)           { return w.used, w.complete }

type fakeEvidence struct {
	held     map[[2]uint64][]KernelHolder
	complete bool
	asked    [][2]uint64
	// waiting and whole are what LockDetail answers.
	waiting map[[2]uint64][]KernelHolder
	whole   bool
	// git and gitComplete are what RepoWitness answers, for any repository;
	// shm and shmKnown what ShmWitness answers.
	git              []KernelHolder
	gitComplete      bool
	shmUsed, shmKnow bool
}

func (f *fakeEvidence) GitWorkers(dev, ino uint64) ([]KernelHolder, bool) {
	return f.git, f.gitComplete
}
func (f *fakeEvidence) ShmInUse(key, id uint64, dataDir string) (bool, bool) {
	return f.shmUsed, f.shmKnow
}

func (f *fakeEvidence) Waiters(dev, ino uint64) []KernelHolder { return f.waiting[[2]uint64{dev, ino}] }
func (f *fakeEvidence) Cover(dir, name string, info fsx.Stat) TableCover {
	return TableCover{Dev: info.Dev, Whole: f.whole}
}

// Locks implements LockTable: the held entries that are locks, not opens.
func (f *fakeEvidence) Locks(dev, ino uint64) []KernelHolder {
	var hs []KernelHolder
	for _, h := range f.held[[2]uint64{dev, ino}] {
		if h.How != "open" {
			hs = append(hs, h)
		}
	}
	return hs
}

func (f *fakeEvidence) Holders(dev, ino uint64) ([]KernelHolder, bool) {
	f.asked = append(f.asked, [2]uint64{dev, ino})
	return f.held[[2]uint64{dev, ino}], f.complete
}

// heldBy is a kernel that sees every process, and every lock (its lock
// table is the whole machine's), and these holders of ino on evDev.
func heldBy(ino uint64, hs ...KernelHolder) *fakeEvidence {
	return &fakeEvidence{complete: true, whole: true, held: map[[2]uint64][]KernelHolder{{evDev, ino}: hs}}
}

// nobodyHolds is a kernel that sees every process and every lock, none
// holding anything.
func nobodyHolds() *fakeEvidence { return &fakeEvidence{complete: true, whole: true} }

// onDisk gives l (and each of its holder records that is the lock file
// itself) a device and inode, as scan does.
func onDisk(l *scan.Lock) *scan.Lock {
	l.Info.Dev, l.Info.Ino = evDev, lockIno
	for i := range l.Holders {
		if l.Kind == scan.KindFile {
			l.Holders[i].Info.Dev, l.Holders[i].Info.Ino = evDev, lockIno
		} else {
			l.Holders[i].Info.Dev, l.Holders[i].Info.Ino = evDev, holderIno
		}
	}
	return l
}

type evCase struct {
	name  string
	procs map[int]Proc
	lock  *scan.Lock
	// ev is the kernel's evidence; nil means the Judge has none.
	ev   *fakeEvidence
	want Verdict
	// reason is a part of the reason; exact, when set, the whole of it.
	reason, exact string
	seen          Seen
	note          string
	remove        []Step
	// notAsked: the evidence must not be consulted at all.
	notAsked bool
	// files is the judge's FileLocks, when not nil.
	files *fakeFileLocks
}

// fakeFileLocks answers FileLocked alike for every file, and remembers
// what it was asked.
type fakeFileLocks struct {
	held, known bool
	how         string
	asked       []string
}

func (f *fakeFileLocks) FileLocked(dir, name string, dev, ino uint64) (bool, string, bool) {
	f.asked = append(f.asked, fmt.Sprintf("%s/%s %d:%d", dir, name, dev, ino))
	return f.held, f.how, f.known
}

func (tc evCase) run(t *testing.T) {
	t.Helper()
	j := &Judge{Host: testHost(), Probe: &fakeProbe{t: t, procs: tc.procs}}
	if tc.ev != nil {
		j.Evidence = tc.ev
	}
	if tc.files != nil {
		j.FileLocks = tc.files
	}
	got := j.Judge(tc.lock)
	checkResult(t, tc.name, got, tc.lock)
	if got.Verdict != tc.want {
		t.Errorf("Judge(%s) = %s (%s), want %s", tc.name, got.Verdict, got.Reason, tc.want)
	}
	if !strings.Contains(got.Reason, tc.reason) {
		t.Errorf("Judge(%s).Reason = %q, want it to contain %q", tc.name, got.Reason, tc.reason)
	}
	if tc.exact != "" && got.Reason != tc.exact {
		t.Errorf("Judge(%s).Reason = %q, want exactly %q", tc.name, got.Reason, tc.exact)
	}
	if got.Seen != tc.seen {
		t.Errorf("Judge(%s).Seen = %v, want %v", tc.name, got.Seen, tc.seen)
	}
	if tc.note != "" && !strings.Contains(strings.Join(got.Notes, "\n"), tc.note) {
		t.Errorf("Judge(%s).Notes = %q, want one containing %q", tc.name, got.Notes, tc.note)
	}
	checkRemove(t, tc.name, tc.lock, got, tc.remove)
	if got.Verdict == Live && (len(got.Remove) != 0 || got.Caveat != "") {
		t.Errorf("Judge(%s) = live with Remove %v, Caveat %q: a held lock gets no remedy", tc.name, got.Remove, got.Caveat)
	}
	if tc.notAsked && tc.ev != nil && len(tc.ev.asked) > 0 {
		t.Errorf("Judge(%s) asked the kernel about %v: a usable record never needs kernel evidence", tc.name, tc.ev.asked)
	}
}

func runEv(t *testing.T, cases []evCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

const partialNote = "no process was seen holding it, but not every process's open files could be read"

// TestJudgeKernelHolders: a lock with no usable owner record is looked up
// in the kernel's tables; a running holder makes it live, named.
func TestJudgeKernelHolders(t *testing.T) {
	rsync := KernelHolder{Pid: 812, Comm: "rsync", How: "flock"}
	emptyFile := func() *scan.Lock { return onDisk(pidFile(scan.FormatEmpty, "", nil, nil)) }
	zeroFile := func() *scan.Lock { return onDisk(pidFile(scan.FormatNoPid, "0", nil, nil)) }
	emptyDirOnDisk := func() *scan.Lock { return onDisk(emptyDir()) }
	malformedA := func() *scan.Lock {
		return onDisk(dirLock(scan.FormatRegistryA, scan.Record{File: lockName + ".holder", Info: fileAt(written), Raw: []byte("token \npid 1\n"),
			Err: &scan.FormatError{Format: scan.FormatRegistryA, Reason: "2 lines, want 4"}}))
	}
	runEv(t, []evCase{
		{
			// Done when: an empty lock file flock-held by a live process
			// reads live, naming that process.
			name:  "empty-file-flock-held",
			lock:  emptyFile(),
			ev:    heldBy(lockIno, rsync),
			want:  Live,
			exact: "no owner record (the lock file is empty: no owner was recorded); flock held by pid 812 (rsync)",
		},
		{
			// Done when: a "0" lock file held open by a live process reads
			// live.
			name:  "zero-file-held-open",
			lock:  zeroFile(),
			ev:    heldBy(lockIno, KernelHolder{Pid: 913, Comm: "mutt", How: "open"}),
			want:  Live,
			exact: "no owner record (the lock file says 0: it was written without an owner's pid); held open by pid 913 (mutt)",
		},
		{
			name:  "empty-dir-flock-held",
			lock:  emptyDirOnDisk(),
			ev:    heldBy(lockIno, KernelHolder{Pid: 77, Comm: "job.sh", How: "flock"}),
			want:  Live,
			exact: "no owner record (the lock directory is empty and there is no holder file beside it); flock held by pid 77 (job.sh)",
		},
		{
			name:   "posix-lock",
			lock:   emptyFile(),
			ev:     heldBy(lockIno, KernelHolder{Pid: 5, Comm: "sqlite3", How: "POSIX lock"}),
			want:   Live,
			reason: "; POSIX lock held by pid 5 (sqlite3)",
		},
		{
			name:   "ofd-lock",
			lock:   zeroFile(),
			ev:     heldBy(lockIno, KernelHolder{Pid: 6, Comm: "qemu", How: "OFD lock"}),
			want:   Live,
			reason: "; OFD lock held by pid 6 (qemu)",
		},
		{
			name:   "malformed-record",
			lock:   onDisk(pidFile(scan.FormatUnrecognized, "hello\n", nil, malformed)),
			ev:     heldBy(lockIno, rsync),
			want:   Live,
			reason: "no owner record (the holder record " + pidName + " is malformed: the content is not a pid); flock held by pid 812 (rsync)",
		},
		{
			// The holder record beside a generation A directory is one of
			// the files asked about: whoever holds it holds the lock.
			name:   "registry-a-malformed-holder-open",
			lock:   malformedA(),
			ev:     heldBy(holderIno, KernelHolder{Pid: 9, Comm: "vi", How: "open"}),
			want:   Live,
			reason: "is malformed: 2 lines, want 4); held open by pid 9 (vi)",
		},
		{
			name:   "two-holders-the-second-noted",
			lock:   emptyDirOnDisk(),
			ev:     heldBy(lockIno, rsync, KernelHolder{Pid: 813, Comm: "rsync", How: "open"}),
			want:   Live,
			reason: "flock held by pid 812 (rsync)",
			note:   "pid 813 (rsync)",
		},
		{
			// A directory lockctl would not remove (it holds other entries)
			// is still live when the kernel says so.
			name:   "dir-with-other-entries",
			lock:   with(onDisk(dirLock(scan.FormatUnrecognized)), func(l *scan.Lock) { l.Others = []string{"notes"} }),
			ev:     heldBy(lockIno, rsync),
			want:   Live,
			reason: "holds no holder record (it holds 1 other entries)); flock held by pid 812",
		},
		{
			name:   "nobody-holds-it",
			lock:   emptyFile(),
			ev:     nobodyHolds(),
			want:   Idle,
			reason: "no process holds a lock on or has open",
			seen:   SeenComplete,
		},
		{
			// The same inode number on another device is another file.
			name:   "same-inode-other-device",
			lock:   emptyDirOnDisk(),
			ev:     &fakeEvidence{complete: true, held: map[[2]uint64][]KernelHolder{{evDev + 1, lockIno}: {rsync}}},
			want:   Ownerless,
			seen:   SeenComplete,
			remove: steps(rmdir(lockPath)),
		},
		{
			name:   "another-inode-held",
			lock:   emptyDirOnDisk(),
			ev:     heldBy(strangerIno, rsync),
			want:   Ownerless,
			seen:   SeenComplete,
			remove: steps(rmdir(lockPath)),
		},
		{
			name:   "partial-view",
			lock:   zeroFile(),
			ev:     &fakeEvidence{complete: false},
			want:   Ownerless,
			reason: "the lock file says 0",
			seen:   SeenPartial,
			note:   partialNote,
			remove: steps(rm(pidPath)),
		},
		{
			// Found despite a partial view: the holder decides.
			name:   "partial-view-but-found",
			lock:   zeroFile(),
			ev:     &fakeEvidence{complete: false, held: map[[2]uint64][]KernelHolder{{evDev, lockIno}: {rsync}}},
			want:   Live,
			reason: "flock held by pid 812 (rsync)",
		},
		{
			name: "no-evidence-at-all",
			lock: emptyFile(),
			want: Ownerless,
			seen: SeenNothing,
		},
	})
}

// TestJudgeGoneButLocked: a lock whose recorded holder is gone, but on
// which a live process holds an advisory lock, is in use: live, and nothing
// is removed. Being held open is not enough to outweigh the record: readers
// and waiting acquirers open locks too.
func TestJudgeGoneButLocked(t *testing.T) {
	b := holderB(holderPid, hereScope)
	for _, how := range []string{"flock", "POSIX lock", "OFD lock"} {
		h := KernelHolder{Pid: 812, Comm: "rsync", How: how}
		runEv(t, []evCase{
			{
				name: "pid-file-" + how, lock: onDisk(pidLock(pidHolder(holderPid))),
				ev: heldBy(lockIno, h), want: Live, reason: "pid 4242 is not running, but " + how + " held by pid 812 (rsync): the lock is in use",
			},
			{
				name: "registry-b-" + how, lock: onDisk(lockB(b)),
				ev: heldBy(lockIno, h), want: Live, reason: "pid 4242 is not running, but " + how + " held by pid 812 (rsync)",
			},
		})
	}
	runEv(t, []evCase{
		{
			// The taker has exited; the lock is held by an inheritor that
			// the kernel's lock table does not name.
			name: "pid-file-lock-of-an-exited-taker", lock: onDisk(pidLock(pidHolder(holderPid))),
			ev: heldBy(lockIno, KernelHolder{How: "OFD lock"}), want: Live, reason: "but the kernel's lock table still holds it (OFD lock, taken by a process that has exited",
		},
		{
			// A break abandoned by a breaker that is gone, of a lock
			// directory a live process flocks (lockctl run's command,
			// flock(1) on the path): in use, as it reads without the
			// claim, so the record goes back and the lock stays.
			name: "claimed-abandoned-break-of-a-flocked-dir", lock: onDisk(emptyDir(breakB(breaker, b))),
			ev: heldBy(lockIno, KernelHolder{Pid: 812, Comm: "rsync", How: "flock"}), want: Claimed,
			reason: "the record it holds is live (pid 4242 is not running, but flock held by pid 812 (rsync))",
			remove: steps(restore(in(regDir, breakBName(breaker, b)), in(lockPath, "holder.4242.0123456789abcdef0123456789abcdef.1"))),
		},
		{
			name: "claimed-abandoned-break-unlocked", lock: onDisk(emptyDir(breakB(breaker, b))),
			ev: nobodyHolds(), want: Claimed, reason: "was abandoned",
			remove: steps(rmdir(lockPath), rm(in(regDir, breakBName(breaker, b)))),
		},
		{
			name: "pid-file-held-open", lock: onDisk(pidLock(pidHolder(holderPid))),
			ev: heldBy(lockIno, KernelHolder{Pid: 812, Comm: "cat", How: "open"}), want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(pidPath)),
		},
		{
			name: "pid-file-unlocked", lock: onDisk(pidLock(pidHolder(holderPid))),
			ev: nobodyHolds(), want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(pidPath)),
		},
	})
}

// TestJudgeKernelHoldersNotAsked: a lock whose record is usable (live,
// foreign, unknown, recycled) or that is only side files is judged by
// that, and the kernel's tables are never consulted, even when they would
// name a holder. (A gone record is the exception: TestJudgeGoneButLocked,
// also for a record a claim holds.)
func TestJudgeKernelHoldersNotAsked(t *testing.T) {
	rsync := KernelHolder{Pid: 812, Comm: "rsync", How: "flock"}
	b := holderB(holderPid, hereScope)
	runEv(t, []evCase{
		{
			name: "live-pid-file", lock: onDisk(pidLock(pidHolder(holderPid))), procs: procs(holderPid, alive),
			ev: heldBy(lockIno, rsync), want: Live, reason: "pid 4242 (registry.sh) is running", notAsked: true,
		},
		{
			name: "foreign-registry-a", lock: onDisk(lockA(holderA(holderPid, "beta"))),
			ev: heldBy(lockIno, rsync), want: Foreign, reason: "names host beta", notAsked: true,
		},
		{
			name: "unknown-out-of-range", lock: onDisk(pidLock(pidHolder(-1))),
			ev: heldBy(lockIno, rsync), want: Unknown, reason: "out of range", notAsked: true,
		},
		{
			name: "only-side-files", lock: orphan(scan.FormatRegistryB, breakB(breaker, b)),
			ev: heldBy(0, rsync), want: Claimed, reason: "the lock itself is gone", notAsked: true,
			remove: steps(rm(in(runDir, breakBName(breaker, b)))),
		},
	})
}

// TestJudgeKernelHolderNamedOnce: for a lock file, the lock and its record
// are one inode; its holder is named once, not noted again as "also".
func TestJudgeKernelHolderNamedOnce(t *testing.T) {
	l := onDisk(pidFile(scan.FormatEmpty, "", nil, nil))
	j := &Judge{Host: testHost(), Probe: &fakeProbe{t: t}, Evidence: heldBy(lockIno, KernelHolder{Pid: 812, Comm: "rsync", How: "flock"})}
	got := j.Judge(l)
	if got.Verdict != Live {
		t.Fatalf("Judge = %s (%s), want live", got.Verdict, got.Reason)
	}
	for _, n := range got.Notes {
		if strings.Contains(n, "pid 812") {
			t.Errorf("Judge.Notes = %q: pid 812 is the holder named in the reason, not another one", got.Notes)
		}
	}
}

// TestJudgeBeforeBoot: a generation B record of this host whose scope is
// not this host's, on a local disk, written more than BootMargin before
// this boot, names a process that ended with an earlier boot. Anything less
// certain stays foreign, and the pid is never looked at.
func TestJudgeBeforeBoot(t *testing.T) {
	yearAgo := bootTime.AddDate(-1, 0, 0)
	// writtenAt is a generation B lock of this host, made just before its
	// record was written at w, with another boot's scope.
	writtenAt := func(w time.Time, f ...func(*scan.Lock)) *scan.Lock {
		l := lockB(holderB(holderPid, otherScope))
		l.Info.Mtime, l.Info.Btime = w.Add(-time.Second), w.Add(-time.Second)
		l.Holders[0].Info.Mtime = w
		l.FS = fsx.FS{Name: "ext4"}
		for _, g := range f {
			g(l)
		}
		return l
	}
	tok := holderB(holderPid, otherScope).Token
	sweep := steps(rm(in(lockPath, "holder."+tok)), rmdir(lockPath))
	const before = "its scope is not this boot's, and the record was written at"
	const foreign = "its scope is not this machine's, boot's and pid namespace's"
	// The pid is running here: it names some process of this boot, which
	// must never be looked at for a record of another.
	running := procs(holderPid, alive)
	cases := []judgeCase{
		{
			// A record of this boot, from another pid namespace, dated
			// before boot by a clock not yet set when it was written.
			name: "scope-of-a-namespace-of-this-boot", procs: running,
			evidence: scopeWitness{used: true, complete: true},
			lock:     writtenAt(yearAgo),
			want:     Foreign, reason: "its scope is that of a pid namespace of this boot", noProbe: true,
		},
		{
			name: "namespaces-not-all-seen", procs: running,
			evidence: scopeWitness{complete: false},
			lock:     writtenAt(yearAgo),
			want:     Foreign, reason: "not every pid namespace of this boot could be seen", noProbe: true,
		},
		{
			name: "no-kernel-to-ask", procs: running,
			evidence: NoEvidence{},
			lock:     writtenAt(yearAgo),
			want:     Foreign, reason: "cannot be checked here", noProbe: true,
		},
		{
			name: "year-before-boot", procs: running,
			lock: writtenAt(yearAgo),
			want: Gone, reason: before, remove: sweep, noProbe: true,
		},
		{
			// This reader's boot id is only a file: the scopes of this
			// boot's namespaces, which hash it, cannot be computed.
			name: "reader-boot-id-not-the-kernels", procs: running,
			host:     func(h *Host) { h.BootIDErr = errors.New("not on procfs") },
			evidence: scopeWitness{complete: true},
			lock:     writtenAt(yearAgo),
			want:     Foreign, reason: "this reader's boot id is not the kernel's word (not on procfs)", noProbe: true,
		},
		{
			name: "reason-says-before-this-host-booted", procs: running,
			lock: writtenAt(yearAgo),
			want: Gone, reason: "before this host booted at " + stamp(bootTime) + ": its holder ended with an earlier boot", remove: sweep, noProbe: true,
		},
		{
			name: "just-beyond-the-margin", procs: running,
			lock: writtenAt(bootTime.Add(-BootMargin - time.Second)),
			want: Gone, reason: before, remove: sweep, noProbe: true,
		},
		{
			name: "exactly-the-margin", procs: running,
			lock: writtenAt(bootTime.Add(-BootMargin)),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			// A clock set after boot can date a record of this boot a few
			// minutes before it.
			name: "within-the-margin", procs: running,
			lock: writtenAt(bootTime.Add(-BootMargin / 2)),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			name: "a-second-before-boot", procs: running,
			lock: writtenAt(bootTime.Add(-time.Second)),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			name: "after-boot", procs: running,
			lock: writtenAt(bootTime.Add(time.Hour)),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			// Another machine's record (a disk moved here, a shared
			// image): its holder may be running there.
			name: "another-host", procs: running,
			lock: writtenAt(yearAgo, func(l *scan.Lock) { l.Holders[0].Holder.Host = "beta" }),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			name: "host-name-in-another-case", procs: running,
			lock: writtenAt(yearAgo, func(l *scan.Lock) { l.Holders[0].Holder.Host = strings.ToUpper(here) }),
			want: Gone, reason: before, remove: sweep, noProbe: true,
		},
		{
			name: "no-host-in-the-record", procs: running,
			lock: writtenAt(yearAgo, func(l *scan.Lock) { l.Holders[0].Holder.Host = "" }),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			name: "this-hosts-name-unreadable", procs: running,
			host: func(h *Host) { h.Name = "" },
			lock: writtenAt(yearAgo),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			// Another machine of this name may share a network disk.
			name: "network-file-system", procs: running,
			lock: writtenAt(yearAgo, func(l *scan.Lock) { l.FS = fsx.FS{Name: "nfs", Remote: true} }),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			name: "file-system-unknown", procs: running,
			lock: writtenAt(yearAgo, func(l *scan.Lock) { l.FS = fsx.FS{Name: "unknown", Remote: true} }),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			name: "boot-time-unknown", procs: running,
			host: func(h *Host) { h.BootTime = time.Time{} },
			lock: writtenAt(yearAgo),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			name: "record-time-unknown", procs: running,
			lock: writtenAt(yearAgo, func(l *scan.Lock) { l.Holders[0].Info.Mtime = time.Time{} }),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			// The record's own time decides, not the directory's.
			name: "old-directory-new-record", procs: running,
			lock: writtenAt(bootTime.Add(time.Minute), func(l *scan.Lock) { l.Info.Mtime, l.Info.Btime = yearAgo, yearAgo }),
			want: Foreign, reason: foreign, noProbe: true,
		},
		{
			// The record matches this host's scope: judged by its pid (here
			// a process that started after the record was written).
			name: "this-scope-before-boot", procs: running,
			lock: writtenAt(yearAgo, func(l *scan.Lock) { l.Holders[0].Holder.Scope = hereScope }),
			want: Recycled, reason: "the pid was reused",
		},
		{
			// An abandoned break of such a record: the record it holds is
			// gone, so the break is finished.
			name: "abandoned-break-of-a-record-from-before-boot",
			lock: func() *scan.Lock {
				h := holderB(holderPid, otherScope)
				c := breakB(breaker, h)
				c.Record.Info.Mtime = yearAgo
				l := emptyDir(c)
				l.Info.Mtime, l.Info.Btime = yearAgo.Add(-time.Hour), yearAgo.Add(-time.Hour)
				return l
			}(),
			want: Claimed, reason: "the record it holds is gone (" + before,
			remove: steps(rmdir(lockPath), rm(in(regDir, breakBName(breaker, holderB(holderPid, otherScope))))),
		},
	}
	for i := range cases {
		if cases[i].evidence == nil {
			// A kernel that saw every pid namespace of this boot, none
			// with the record's scope.
			cases[i].evidence = scopeWitness{complete: true}
		}
	}
	run(t, cases)
}

// TestJudgeNetworkFileSystem: on a network file system a bare pid may be
// another host's, and a lockctl record of another boot may be another
// machine's of the same name: foreign, never gone, and the pid is never
// looked at.
func TestJudgeNetworkFileSystem(t *testing.T) {
	nfs := func(l *scan.Lock) { l.FS = fsx.FS{Name: "nfs", Remote: true} }
	local := func(l *scan.Lock) { l.FS = fsx.FS{Name: "ext4"} }
	const bare = "the record is a bare pid on a network file system (nfs), where it may belong to another host"
	// lockctl's own record, fenced by start time and boot.
	lockctlRec := func(boot string, start uint64) *scan.Lock {
		h := &scan.Holder{Pid: holderPid, PidText: "4242", Host: here, Command: "make",
			Token: "4242." + hex32 + ".1", Start: start, HasStart: true, BootID: boot, PidNS: hereNS}
		return dirLock(scan.FormatLockctl, scan.Record{File: lockName + "/holder", Info: fileAt(written), Raw: []byte("lockctl-lock 1\n"), Holder: h})
	}
	const otherBoot = "0f0f0f0f-1b7d-4d3e-9f0a-3c5b7e9d1f20"
	run(t, []judgeCase{
		{
			name: "bare-pid-on-nfs-not-running",
			lock: with(pidLock(pidHolder(holderPid)), nfs),
			want: Foreign, reason: bare, noProbe: true,
		},
		{
			name: "bare-pid-on-nfs-running", procs: procs(holderPid, alive),
			lock: with(pidLock(pidHolder(holderPid)), nfs),
			want: Foreign, reason: bare, noProbe: true,
		},
		{
			name: "uucp-on-cifs",
			lock: with(pidFile(scan.FormatUUCP, "      4242\n", pidHolder(holderPid), nil), func(l *scan.Lock) { l.FS = fsx.FS{Name: "cifs", Remote: true} }),
			want: Foreign, reason: "bare pid on a network file system (cifs)", noProbe: true,
		},
		{
			name: "bare-pid-on-fuse",
			lock: with(pidLock(pidHolder(holderPid)), func(l *scan.Lock) { l.FS = fsx.FS{Name: "fuse", Remote: true} }),
			want: Foreign, reason: "bare pid on a network file system (fuse)", noProbe: true,
		},
		{
			name: "bare-pid-on-local-disk",
			lock: with(pidLock(pidHolder(holderPid)), local),
			want: Gone, reason: "pid 4242 is not running", remove: steps(rm(pidPath)),
		},
		{
			// A record naming this host but no boot may be another
			// machine's of that name (issue 28, review F6): it was
			// judged here, and read gone, before.
			name: "pid-kv-naming-this-host-on-nfs",
			lock: with(pidFile(scan.FormatKeyValue, "pid=4242\nhost=alpha\n", &scan.Holder{Pid: holderPid, PidText: "4242", Host: here}, nil), nfs),
			want: Foreign, reason: "names host alpha but no boot, on a network file system (nfs)", noProbe: true,
		},
		{
			name: "pid-kv-naming-another-host-on-nfs",
			lock: with(pidFile(scan.FormatKeyValue, "pid=4242\nhost=beta\n", &scan.Holder{Pid: holderPid, PidText: "4242", Host: "beta"}, nil), nfs),
			want: Foreign, reason: "names host beta", noProbe: true,
		},
		{
			name: "lockctl-record-of-another-boot-on-nfs",
			lock: with(lockctlRec(otherBoot, alive.Start), nfs),
			want: Foreign, reason: "the record is from boot " + otherBoot + " of a host named alpha, on a network file system (nfs)", noProbe: true,
		},
		{
			name: "lockctl-record-of-another-boot-on-local-disk",
			lock: with(lockctlRec(otherBoot, alive.Start), local),
			want: Gone, reason: "the record is from boot " + otherBoot + ", and this is boot " + hereBoot,
			remove: steps(rm(in(lockPath, "holder")), rmdir(lockPath)),
		},
		{
			name: "lockctl-record-of-this-boot-on-nfs", procs: procs(holderPid, alive),
			lock: with(lockctlRec(hereBoot, alive.Start), nfs),
			want: Live, reason: "start time matches the record",
		},
		{
			// Owner-less stays owner-less on a network disk (the fixer, not
			// the verdict, refuses to sweep it there).
			name: "empty-file-on-nfs",
			lock: with(pidFile(scan.FormatEmpty, "", nil, nil), nfs),
			want: Ownerless, reason: "the lock file is empty",
		},
	})
}

// TestLocksOnly: the evidence acquire judges with answers the lock table
// and nothing else: no scan of open files for an owner-less lock, and no
// before-boot record taken for gone.
func TestLocksOnly(t *testing.T) {
	full := &fakeEvidence{complete: true, held: map[[2]uint64][]KernelHolder{{evDev, lockIno}: {{Pid: 812, Comm: "rsync", How: "flock"}}}}
	lo := LocksOnly{Evidence: full}
	if hs, complete := lo.Holders(evDev, lockIno); hs != nil || complete {
		t.Errorf("LocksOnly.Holders = %v, %v; want nothing, incomplete", hs, complete)
	}
	if len(full.asked) != 0 {
		t.Errorf("LocksOnly asked the full evidence about %v", full.asked)
	}
	if hs := lo.Locks(evDev, lockIno); len(hs) != 1 || hs[0].Pid != 812 {
		t.Errorf("LocksOnly.Locks = %v, want the flock of pid 812", hs)
	}
	var e Evidence = LocksOnly{Evidence: scopeWitness{complete: true}}
	if _, ok := e.(ScopeWitness); ok {
		t.Error("LocksOnly is a ScopeWitness: the before-boot rule could fire on its word")
	}
}

// TestJudgeKernelLockFile: a file known to be a kernel lock (dpkg's, or one
// lockctl made) is held exactly while the kernel's lock table shows a lock on
// it, free when the whole table shows none, and never has a remedy; an empty
// file of unknown kind stays owner-less.
func TestJudgeKernelLockFile(t *testing.T) {
	dpkg := func() *scan.Lock {
		l := onDisk(pidFile(scan.FormatEmpty, "", nil, nil))
		l.KernelLock = "dpkg"
		return l
	}
	mine := func() *scan.Lock {
		l := onDisk(pidFile(scan.FormatKernel, scan.KernelRecord, nil, nil))
		l.KernelLock = "lockctl"
		return l
	}
	whole := func(ev *fakeEvidence) *fakeEvidence { ev.whole = true; return ev }
	apt := KernelHolder{Pid: 4242, Comm: "apt-get", How: "POSIX lock", Mode: "WRITE"}
	waiter := KernelHolder{Pid: 4300, Comm: "unattended-upgr", How: "POSIX lock", Mode: "WRITE"}
	held := whole(heldBy(lockIno, apt))
	held.waiting = map[[2]uint64][]KernelHolder{{evDev, lockIno}: {waiter}}
	runEv(t, []evCase{
		{name: "dpkg-idle", lock: dpkg(), ev: whole(nobodyHolds()), want: Free, reason: "a kernel-lock file of dpkg: no process holds a lock on it, so it is free"},
		{name: "lockctl-idle", lock: mine(), ev: whole(nobodyHolds()), want: Free, reason: "a kernel-lock file of lockctl"},
		{name: "dpkg-held", lock: dpkg(), ev: held, want: Live, exact: "a kernel-lock file of dpkg: POSIX lock held by pid 4242 (apt-get)"},
		// Open is not held: apt opens the lock to take it, and so does a reader.
		{name: "dpkg-only-open", lock: dpkg(), ev: whole(heldBy(lockIno, KernelHolder{Pid: 9, Comm: "cat", How: "open"})), want: Free},
		// A child pid namespace's /proc/locks lists only its own locks.
		{name: "dpkg-partial-table", lock: dpkg(), ev: &fakeEvidence{complete: true}, want: Unknown, reason: "judge it from the host"},
		{name: "dpkg-no-table", lock: dpkg(), want: Unknown, reason: "the kernel's lock table was not read"},
		{name: "unknown-kind-is-idle", lock: onDisk(pidFile(scan.FormatEmpty, "", nil, nil)), ev: whole(nobodyHolds()), want: Idle, seen: SeenComplete, reason: "its bytes cannot tell which"},
	})
	j := &Judge{Host: testHost(), Probe: &fakeProbe{t: t}, Evidence: held}
	got := j.Judge(dpkg())
	if len(got.Kernel) != 1 || got.Kernel[0] != apt || len(got.Waiters) != 1 || got.Waiters[0] != waiter {
		t.Errorf("Judge(dpkg-held).Kernel, .Waiters = %+v, %+v, want [%+v], [%+v]", got.Kernel, got.Waiters, apt, waiter)
	}
}

// TestJudgeGitLock: a git lock (git records no holder, and keeps no file
// open while a commit waits in its editor) is live while a git process works
// in its repository, unknown when that cannot be told, and owner-less only
// when every git process was seen and none works there.
func TestJudgeGitLock(t *testing.T) {
	gitLock := func() *scan.Lock {
		l := onDisk(pidFile(scan.FormatUnrecognized, "DIRC\x00\x00\x00\x02", nil, &scan.FormatError{Format: scan.FormatUnrecognized, Reason: "the content is binary"}))
		l.Producer, l.Repo = scan.ProducerGit, &scan.Repo{Path: "/srv/repo/.git", Dev: 9, Ino: 99}
		return l
	}
	commit := KernelHolder{Pid: 4321, Comm: "git", How: "works in the repository"}
	ev := func(hs []KernelHolder, complete bool) *fakeEvidence {
		e := nobodyHolds()
		e.git, e.gitComplete = hs, complete
		return e
	}
	runEv(t, []evCase{
		{name: "git-commit-in-editor", lock: gitLock(), ev: ev([]KernelHolder{commit}, true), want: Live,
			exact: "a git lock of the repository /srv/repo/.git: git process pid 4321 (git) works in it"},
		// Even an incomplete look that found one: it is held.
		{name: "git-found-in-partial-look", lock: gitLock(), ev: ev([]KernelHolder{commit}, false), want: Live},
		{name: "git-unseen", lock: gitLock(), ev: ev(nil, false), want: Unknown, reason: "not every git process's working directory could be seen"},
		{name: "git-none", lock: gitLock(), ev: ev(nil, true), want: Ownerless, seen: SeenComplete, reason: "no git process works in it",
			remove: []Step{{Op: OpRemove, Path: "/run/lock/LCK..ttyS0"}}},
	})
}

// TestJudgePostgres: a PostgreSQL data directory's lock whose postmaster is
// gone stays held while its shared memory is attached (orphan backends),
// and when that cannot be examined; only a segment seen gone or unattached
// leaves it gone, as PostgreSQL decides.
func TestJudgePostgres(t *testing.T) {
	pg := func(shm bool) *scan.Lock {
		h := &scan.Holder{Pid: 9333, PidText: "9333", Command: "postgres", Since: written}
		l := onDisk(pidFile(scan.FormatPostgres, "9333\n/srv/pg\n", h, nil))
		l.Producer, l.Postgres = scan.ProducerPostgres, &scan.Postgres{DataDir: "/srv/pg", ShmKey: 5432001, ShmID: 7, HasShm: shm}
		return l
	}
	ev := func(used, known bool) *fakeEvidence {
		e := nobodyHolds()
		e.shmUsed, e.shmKnow = used, known
		return e
	}
	gone := []Step{{Op: OpRemove, Path: "/run/lock/LCK..ttyS0"}}
	runEv(t, []evCase{
		{name: "postmaster-running", lock: pg(true), procs: map[int]Proc{9333: alive}, ev: ev(false, true), want: Live, notAsked: true},
		{name: "orphan-backends", lock: pg(true), ev: ev(true, true), want: Live, reason: "processes are still attached to its shared memory segment (key 5432001, id 7)"},
		{name: "segment-unseen", lock: pg(true), ev: ev(false, false), want: Unknown, reason: "cannot be examined from here"},
		{name: "segment-gone", lock: pg(true), ev: ev(false, true), want: Gone, remove: gone},
		{name: "socket-lock", lock: pg(false), ev: ev(true, false), want: Gone, remove: gone},
	})
}

// TestJudgeMercurialNamespace: a Mercurial lock recorded in another pid
// namespace is foreign even when that namespace has ended (a generic record
// would then be gone): hg itself compares the whole "<host>/<namespace>"
// prefix and takes any other for held.
func TestJudgeMercurialNamespace(t *testing.T) {
	hg := func(ns string) *scan.Lock {
		h := &scan.Holder{Pid: 4242, PidText: "4242", Host: here, PidNS: ns, Command: "hg"}
		l := onDisk(pidFile(scan.FormatMercurial, "", h, nil))
		l.Kind, l.Producer = scan.KindSymlink, scan.ProducerMercurial
		return l
	}
	j := &Judge{Host: testHost(), Probe: &fakeProbe{t: t}}
	if got := j.Judge(hg("pid:[4026532999]")); got.Verdict != Foreign || !strings.Contains(got.Reason, "hg itself takes such a lock as held") {
		t.Errorf("Judge(a Mercurial lock of an ended pid namespace) = %s (%s), want foreign", got.Verdict, got.Reason)
	}
	if got := j.Judge(hg(hereNS)); got.Verdict != Gone {
		t.Errorf("Judge(a Mercurial lock of this namespace, pid gone) = %s (%s), want gone", got.Verdict, got.Reason)
	}
}

// TestJudgePartialLockTable: a lock table that is not the whole machine's
// (read in a child pid namespace, or not read at all) that lists no lock on
// a gone holder's lock proves nothing (issue 28, case 2): the one file is
// asked instead (FileLocks), and without its word the lock is unknown, for
// a gone holder, a claimed record and a kernel-lock file alike.
func TestJudgePartialLockTable(t *testing.T) {
	b := holderB(holderPid, hereScope)
	partial := func() *fakeEvidence { return &fakeEvidence{complete: false} }
	flocked := func() *fakeFileLocks {
		return &fakeFileLocks{held: true, known: true, how: "a flock is held on it (the kernel refused this process's non-blocking flock)"}
	}
	free := func() *fakeFileLocks {
		return &fakeFileLocks{known: true, how: "no process holds a flock, POSIX or OFD lock on it"}
	}
	unseen := func() *fakeFileLocks {
		return &fakeFileLocks{how: "a flock cannot be seen without taking it: judge it from the host, or with --fix"}
	}
	dpkg := func() *scan.Lock {
		l := onDisk(pidFile(scan.FormatEmpty, "", nil, nil))
		l.KernelLock = "dpkg"
		return l
	}
	claimedDir := func() *scan.Lock {
		l := onDisk(emptyDir(breakB(breaker, b)))
		l.Claims[0].Record.Info.Dev, l.Claims[0].Record.Info.Ino = evDev, holderIno
		return l
	}
	restoreB := steps(restore(in(regDir, breakBName(breaker, b)), in(lockPath, "holder.4242.0123456789abcdef0123456789abcdef.1")))
	runEv(t, []evCase{
		{name: "gone-partial-no-tester", lock: onDisk(pidLock(pidHolder(holderPid))), ev: partial(), want: Unknown,
			reason: "pid 4242 is not running, but that no process holds a kernel lock on it is not proved: the kernel's lock table here lists only this pid namespace's locks"},
		{name: "gone-partial-flocked", lock: onDisk(pidLock(pidHolder(holderPid))), ev: partial(), files: flocked(), want: Live,
			reason: "pid 4242 is not running, but a flock is held on it (the kernel refused this process's non-blocking flock): the lock is in use"},
		{name: "gone-partial-free", lock: onDisk(pidLock(pidHolder(holderPid))), ev: partial(), files: free(), want: Gone,
			reason: "pid 4242 is not running", remove: steps(rm(pidPath))},
		{name: "gone-partial-unseen", lock: onDisk(pidLock(pidHolder(holderPid))), ev: partial(), files: unseen(), want: Unknown,
			reason: "judge it from the host, or with --fix"},
		{name: "gone-whole-table-not-asked", lock: onDisk(pidLock(pidHolder(holderPid))), ev: nobodyHolds(), files: flocked(), want: Gone,
			reason: "pid 4242 is not running", remove: steps(rm(pidPath))},
		{name: "gone-no-evidence-not-asked", lock: onDisk(lockB(b)), ev: nil, want: Gone, reason: "pid 4242 is not running",
			remove: removeLock(onDisk(lockB(b)))},
		{name: "claimed-partial-no-tester", lock: claimedDir(), ev: partial(), want: Claimed,
			reason: "the record it holds is unknown (pid 4242 is not running, but whether a process holds a lock on it cannot be told"},
		{name: "claimed-partial-flocked", lock: claimedDir(), ev: partial(), files: flocked(), want: Claimed,
			reason: "the record it holds is live (pid 4242 is not running, but a flock is held on it", remove: restoreB},
		{name: "claimed-partial-free", lock: claimedDir(), ev: partial(), files: free(), want: Claimed, reason: "was abandoned",
			remove: steps(rmdir(lockPath), rm(in(regDir, breakBName(breaker, b))))},
		{name: "claimed-partial-unseen", lock: claimedDir(), ev: partial(), files: unseen(), want: Claimed,
			reason: "the record it holds is unknown"},
		{name: "kernel-lock-partial-flocked", lock: dpkg(), ev: partial(), files: flocked(), want: Live, reason: "a kernel-lock file of dpkg: a flock is held on it"},
		{name: "kernel-lock-partial-free", lock: dpkg(), ev: partial(), files: free(), want: Free, reason: "so it is free"},
		{name: "kernel-lock-partial-unseen", lock: dpkg(), ev: partial(), files: unseen(), want: Unknown, reason: "no lock on it is listed, but the kernel's lock table here lists only"},
	})
	// The tester is asked about the lock itself, where it stands: a lock
	// file claimed out of its name (fix's second judgement) stands at the
	// claim's name.
	for _, claimed := range []bool{false, true} {
		files := free()
		j := &Judge{Host: testHost(), Probe: &fakeProbe{t: t}, Evidence: partial(), FileLocks: files}
		l := onDisk(pidLock(pidHolder(holderPid)))
		name := l.Name
		if claimed {
			name = l.Name + ".dead.1.2"
			l.Holders[0].File = name
		}
		if r := j.Judge(l); r.Verdict != Gone {
			t.Errorf("claimed %v: Judge = %s (%s), want gone", claimed, r.Verdict, r.Reason)
		}
		if want := fmt.Sprintf("%s/%s %d:%d", l.Dir, name, evDev, lockIno); len(files.asked) != 1 || files.asked[0] != want {
			t.Errorf("claimed %v: FileLocks was asked %q, want [%q]", claimed, files.asked, want)
		}
	}
}

package verdict

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
)

// The host every table row is judged on, unless the row changes it.
const (
	testPidMax = 32768
	here       = "alpha"
	hereBoot   = "6a2f1c9e-1b7d-4d3e-9f0a-3c5b7e9d1f20"
	hereNS     = "pid:[4026531836]"
	hex32      = "0123456789abcdef0123456789abcdef"

	regDir   = "/srv/agmsg/teams/alpha"
	lockName = ".config.lock"
	lockPath = regDir + "/" + lockName

	runDir  = "/run/lock"
	pidName = "LCK..ttyS0"
	pidPath = runDir + "/" + pidName

	holderPid = 4242 // the pid most records name
	otherPid  = 4343
	breaker   = 777 // the pid in break claims' names
)

var (
	hereScope  = strings.Repeat("5c", 32)
	otherScope = strings.Repeat("a7", 32)
	bootTime   = time.Date(2025, 3, 1, 6, 0, 0, 0, time.UTC)
	dirMade    = bootTime.Add(10 * time.Hour) // when lock directories were made
	written    = dirMade.Add(time.Second)     // when holder records were written
)

func testHost() Host {
	return Host{
		Name:         here,
		BootID:       hereBoot,
		PidNS:        hereNS,
		InitialPidNS: true,
		MachineID:    "3d1219c7c4c5404aaa1f6d2a48adfda4",
		Scope:        hereScope,
		PidMax:       testPidMax,
		BootTime:     bootTime,
		Ticks:        100,
	}
}

// ticksAt is the start time, in ticks of the test host, of a process that
// started at t.
func ticksAt(t time.Time) uint64 { return uint64(t.Sub(bootTime) / (10 * time.Millisecond)) }

// runningSince is a running process that started at t.
func runningSince(t time.Time) Proc {
	return Proc{State: StateRunning, Start: ticksAt(t), HasStart: true, Shown: ticksAt(t), HasShown: true, Comm: "registry.sh"}
}

// alive started a minute before its lock directory was made: the holder.
var alive = runningSince(dirMade.Add(-time.Minute))

// fakeProbe answers from a map; a pid missing from it is not running. It
// fails the test if it is ever asked about a pid that is not a process id
// (kill(-1, 0) would address every process) or is above pid_max.
//
// It sees every pid namespace (PidSpace): namesakes lists the processes of
// other namespaces by their inner pid, namespaces the namespaces that have
// a process in them, and view, when set, is why it cannot see them.
//
// It is a ClockWitness: clocks says which pids are in another clock than
// the reader's (a pid missing from it is in the reader's).
type fakeProbe struct {
	t          *testing.T
	procs      map[int]Proc
	calls      []int
	namesakes  map[int][]Namesake
	namespaces map[string]bool
	view       error
	clocks     map[int]error
}

func (f *fakeProbe) SameClock(pid int) error { return f.clocks[pid] }

// clockless is a probe that is no ClockWitness (macOS, other systems).
type clockless struct{ p *fakeProbe }

func (c clockless) Probe(pid int) Proc { return c.p.Probe(pid) }

func (f *fakeProbe) Namesakes() (map[int][]Namesake, error) {
	if f.view != nil {
		return nil, f.view
	}
	return f.namesakes, nil
}

func (f *fakeProbe) NamespaceInUse(ns string) (bool, error) {
	if f.view != nil {
		return false, f.view
	}
	return f.namespaces[ns] || ns == hereNS, nil
}

func (f *fakeProbe) Probe(pid int) Proc {
	f.t.Helper()
	f.calls = append(f.calls, pid)
	if pid <= 0 || pid > testPidMax {
		f.t.Errorf("Probe(%d) was called: a pid outside 1..%d must never reach the kernel", pid, testPidMax)
	}
	if p, ok := f.procs[pid]; ok {
		return p
	}
	return Proc{State: StateAbsent}
}

// Holder records.

func holderA(pid int64, host string) *scan.Holder {
	return &scan.Holder{
		Pid:     pid,
		PidText: strconv.FormatInt(pid, 10),
		Host:    host,
		Command: "registry.sh",
		Token:   fmt.Sprintf("%s.%d.%d.%s", host, pid, written.Unix(), hex32),
		Since:   time.Unix(written.Unix(), 0),
	}
}

func rawA(h *scan.Holder) string {
	return fmt.Sprintf("token %s\npid %s\ncommand %s\nhost %s\n", h.Token, h.PidText, h.Command, h.Host)
}

func holderB(pid int64, scope string) *scan.Holder {
	return &scan.Holder{
		Pid:     pid,
		PidText: strconv.FormatInt(pid, 10),
		Host:    here,
		Command: "registry.sh",
		Token:   fmt.Sprintf("%d.%s.1", pid, hex32),
		Scope:   scope,
	}
}

func rawB(h *scan.Holder) string {
	s := fmt.Sprintf("token %s\npid %s\ncommand %s\nhost %s\n", h.Token, h.PidText, h.Command, h.Host)
	if h.Scope != "" {
		s += "scope " + h.Scope + "\n"
	}
	if h.Break != "" {
		s += "break " + h.Break + "\n"
	}
	return s
}

func pidHolder(pid int64) *scan.Holder {
	return &scan.Holder{Pid: pid, PidText: strconv.FormatInt(pid, 10)}
}

// fenced is a pid record that carries a start time, boot and namespace.
func fenced(pid int64, start uint64, boot string) *scan.Holder {
	h := pidHolder(pid)
	h.Start, h.HasStart, h.BootID, h.PidNS = start, true, boot, hereNS
	return h
}

func modified(h *scan.Holder, f func(*scan.Holder)) *scan.Holder { f(h); return h }

func fileAt(t time.Time) fsx.Stat { return fsx.Stat{Mode: 0o644, Nlink: 1, Size: 64, Mtime: t} }

func recA(h *scan.Holder) scan.Record {
	return scan.Record{File: lockName + ".holder", Info: fileAt(written), Raw: []byte(rawA(h)), Holder: h}
}

func recB(h *scan.Holder) scan.Record {
	return scan.Record{File: lockName + "/holder." + h.Token, Info: fileAt(written), Raw: []byte(rawB(h)), Holder: h}
}

// Locks.

func dirLock(format scan.Format, holders ...scan.Record) *scan.Lock {
	return &scan.Lock{
		Path: lockPath, Dir: regDir, Name: lockName, Kind: scan.KindDir,
		Info:    fsx.Stat{Mode: fs.ModeDir | 0o755, Nlink: 2, Mtime: dirMade, Btime: dirMade},
		Format:  format,
		Holders: holders,
	}
}

func lockA(h *scan.Holder) *scan.Lock { return dirLock(scan.FormatRegistryA, recA(h)) }

func lockB(hs ...*scan.Holder) *scan.Lock {
	var recs []scan.Record
	for _, h := range hs {
		recs = append(recs, recB(h))
	}
	return dirLock(scan.FormatRegistryB, recs...)
}

func emptyDir(cs ...scan.Claim) *scan.Lock {
	l := dirLock(scan.FormatEmpty)
	l.Claims = cs
	return l
}

func pidFile(format scan.Format, raw string, h *scan.Holder, err error) *scan.Lock {
	return &scan.Lock{
		Path: pidPath, Dir: runDir, Name: pidName, Kind: scan.KindFile,
		Info:    fileAt(written),
		Format:  format,
		Holders: []scan.Record{{File: pidName, Info: fileAt(written), Raw: []byte(raw), Holder: h, Err: err}},
	}
}

func pidLock(h *scan.Holder) *scan.Lock {
	return pidFile(scan.FormatPid, h.PidText+"\n", h, nil)
}

func orphan(format scan.Format, cs ...scan.Claim) *scan.Lock {
	return &scan.Lock{Path: pidPath, Dir: runDir, Name: pidName, Kind: scan.KindMissing, Format: format, Claims: cs}
}

func with(l *scan.Lock, f func(*scan.Lock)) *scan.Lock { f(l); return l }

// Side files.

func claim(kind scan.ClaimKind, name string, by int64, raw string, h *scan.Holder) scan.Claim {
	return scan.Claim{Kind: kind, By: by, Record: scan.Record{File: name, Info: fileAt(written), Raw: []byte(raw), Holder: h}}
}

// buildOf is a lockctl build beside the lock as scan reads it: the
// directory <lock>.new.<token>.<maker>, holding only a lockctl record of
// that token (whose holder is h).
func buildOf(lock, token string, maker int64, h *scan.Holder) scan.Claim {
	c := *h
	c.Token = token
	raw := scan.LockctlMagic + "\ntoken " + token + "\n"
	cl := claim(scan.ClaimBuild, fmt.Sprintf("%s.new.%s.%d/holder", lock, token, maker), maker, raw, &c)
	cl.Maker, cl.Token = true, token
	return cl
}

func breakAName(by int64) string { return fmt.Sprintf("%s.dead.%d.31337", lockName, by) }

func breakA(by int64, h *scan.Holder) scan.Claim {
	return claim(scan.ClaimBreak, breakAName(by), by, rawA(h), h)
}

func breakBName(by int64, h *scan.Holder) string {
	return fmt.Sprintf("%s.dead.%s.%d", lockName, h.Token, by)
}

func breakB(by int64, h *scan.Holder) scan.Claim {
	return claim(scan.ClaimBreak, breakBName(by, h), by, rawB(h), h)
}

func releasingName(pid int64) string { return fmt.Sprintf("%s.holder.releasing.%d", lockName, pid) }

func releasingA(h *scan.Holder) scan.Claim {
	return claim(scan.ClaimRelease, releasingName(h.Pid), h.Pid, rawA(h), h)
}

func publishB(h *scan.Holder) scan.Claim {
	return claim(scan.ClaimPublish, lockName+".pub."+h.Token, h.Pid, rawB(h), h)
}

const pidBreakName = pidName + ".dead.777.99"

func breakUUCP(by int64, pid int64) scan.Claim {
	return claim(scan.ClaimBreak, pidBreakName, by, fmt.Sprintf("%10d\n", pid), pidHolder(pid))
}

func writer(h *scan.Holder, pid int64) scan.Writer {
	return scan.Writer{Name: fmt.Sprintf("writer.%s.%d", h.Token, pid), Token: h.Token, Pid: pid}
}

// Remedies.

func rm(p string) Step             { return Step{Op: OpRemove, Path: p} }
func rmdir(p string) Step          { return Step{Op: OpRmdir, Path: p} }
func restore(p, to string) Step    { return Step{Op: OpRestore, Path: p, To: to} }
func steps(s ...Step) []Step       { return s }
func in(dir, name string) string   { return dir + "/" + name }
func procs(kv ...any) map[int]Proc { m := map[int]Proc{}; addProcs(m, kv...); return m }

func addProcs(m map[int]Proc, kv ...any) {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(int)] = kv[i+1].(Proc)
	}
}

var (
	errEACCES = &fs.PathError{Op: "open", Path: lockPath, Err: syscall.EACCES}
	malformed = &scan.FormatError{Format: scan.FormatUnrecognized, Reason: "the content is not a pid"}
)

type judgeCase struct {
	name string
	host func(*Host) // changes the test host, or nil
	// evidence, when set, is the Judge's kernel evidence.
	evidence Evidence
	procs    map[int]Proc
	lock     *scan.Lock
	want     Verdict
	// reason is a part of the reason that names the branch taken.
	reason string
	// remove is the exact remedy; nil when none is due.
	remove []Step
	// note, when set, must be part of one of the notes.
	note string
	// noProbe: the probe must not be asked anything (a pid from elsewhere
	// names some unrelated process here).
	noProbe bool
	// namesakes, namespaces and view are what the probe knows of other pid
	// namespaces (fakeProbe).
	namesakes  map[int][]Namesake
	namespaces map[string]bool
	view       error
	// clocks are the pids the probe says are in another clock than the
	// reader's; clockless makes it no ClockWitness at all.
	clocks    map[int]error
	clockless bool
	// debris is the exact Result.Debris, where the case says.
	debris []Step
}

// checkRemove checks got's remedy: want, except that a gone lock whose
// record its producers may rewrite in place (scan.InPlace, a bare pid
// file) gets none, and a note that says why.
func checkRemove(t *testing.T, name string, l *scan.Lock, got Result, want []Step) {
	t.Helper()
	if got.Verdict == Gone && scan.InPlace(l) != "" {
		want = nil
		if !slices.Contains(got.Notes, scan.InPlaceRule) {
			t.Errorf("Judge(%s).Notes = %q, want the in-place rule", name, got.Notes)
		}
	}
	if !reflect.DeepEqual(got.Remove, want) && (len(got.Remove) != 0 || len(want) != 0) {
		t.Errorf("Judge(%s).Remove = %v, want %v", name, got.Remove, want)
	}
}

func (tc judgeCase) run(t *testing.T) {
	t.Helper()
	h := testHost()
	if tc.host != nil {
		tc.host(&h)
	}
	p := &fakeProbe{t: t, procs: tc.procs, namesakes: tc.namesakes, namespaces: tc.namespaces, view: tc.view, clocks: tc.clocks}
	j := &Judge{Host: h, Probe: p, Evidence: tc.evidence}
	if tc.clockless {
		j.Probe = clockless{p}
	}
	got := j.Judge(tc.lock)
	checkResult(t, tc.name, got, tc.lock)
	if got.Verdict != tc.want {
		t.Errorf("Judge(%s) = %s (%s), want %s", tc.name, got.Verdict, got.Reason, tc.want)
	}
	if !strings.Contains(got.Reason, tc.reason) {
		t.Errorf("Judge(%s).Reason = %q, want it to contain %q", tc.name, got.Reason, tc.reason)
	}
	checkRemove(t, tc.name, tc.lock, got, tc.remove)
	if tc.debris != nil && !reflect.DeepEqual(got.Debris, tc.debris) && (len(got.Debris) != 0 || len(tc.debris) != 0) {
		t.Errorf("Judge(%s).Debris = %v, want %v", tc.name, got.Debris, tc.debris)
	}
	if tc.note != "" && !strings.Contains(strings.Join(got.Notes, "\n"), tc.note) {
		t.Errorf("Judge(%s).Notes = %q, want one containing %q", tc.name, got.Notes, tc.note)
	}
	if tc.noProbe && len(p.calls) > 0 {
		t.Errorf("Judge(%s) probed pids %v, want no probe at all", tc.name, p.calls)
	}
}

// checkResult asserts what holds for every judgement, whatever the lock.
func checkResult(t *testing.T, name string, got Result, l *scan.Lock) {
	t.Helper()
	if got.Lock != l {
		t.Errorf("Judge(%s).Lock = %p, want the lock judged (%p)", name, got.Lock, l)
	}
	if got.Reason == "" {
		t.Errorf("Judge(%s).Reason is empty, want the evidence", name)
	}
	switch got.Verdict {
	case Live, Recycled, Foreign, Unknown, Free:
		if len(got.Remove) != 0 {
			t.Errorf("Judge(%s) = %s with Remove %v, want no remedy for a %s lock", name, got.Verdict, got.Remove, got.Verdict)
		}
	}
	switch {
	case got.Verdict == Ownerless && len(got.Remove) > 0:
		if got.Caveat != OwnerlessCaveat {
			t.Errorf("Judge(%s) = ownerless with Caveat %q, want %q", name, got.Caveat, OwnerlessCaveat)
		}
	case got.Caveat != "":
		t.Errorf("Judge(%s) = %s with Remove %v and Caveat %q, want no caveat", name, got.Verdict, got.Remove, got.Caveat)
	}
}

func run(t *testing.T, cases []judgeCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("two cases are named %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, tc.run)
	}
}

func TestJudgeLive(t *testing.T) {
	run(t, []judgeCase{
		{
			name:  "pid-file-running",
			procs: procs(holderPid, alive),
			lock:  pidLock(pidHolder(holderPid)),
			want:  Live, reason: "pid 4242 (registry.sh) is running",
		},
		{
			name:  "registry-a-running",
			procs: procs(holderPid, alive),
			lock:  lockA(holderA(holderPid, here)),
			want:  Live, reason: "is running",
		},
		{
			name:  "registry-a-same-host-other-case-is-not-foreign",
			procs: procs(holderPid, alive),
			lock:  lockA(holderA(holderPid, "ALPHA")),
			want:  Live, reason: "is running",
		},
		{
			name:  "registry-b-scope-matches",
			procs: procs(holderPid, alive),
			lock:  lockB(holderB(holderPid, hereScope)),
			want:  Live, reason: "is running",
		},
		{
			name:  "registry-b-no-scope-running",
			procs: procs(holderPid, alive),
			lock:  lockB(holderB(holderPid, "")),
			want:  Live, reason: "is running",
		},
		{
			name:  "eperm-is-alive",
			procs: procs(holderPid, Proc{State: StateRunning, Denied: true}),
			lock:  pidLock(pidHolder(holderPid)),
			want:  Live, reason: "is running as another user",
		},
		{
			name:  "eperm-with-start-time-is-alive",
			procs: procs(holderPid, Proc{State: StateRunning, Denied: true, HasStart: true, Start: alive.Start, Comm: "cron"}),
			lock:  lockA(holderA(holderPid, here)),
			want:  Live, reason: "pid 4242 (cron) is running as another user",
		},
		{
			name:  "start-time-unreadable",
			procs: procs(holderPid, Proc{State: StateRunning, Err: errors.New("cannot read /proc/4242/stat: permission denied")}),
			lock:  pidLock(pidHolder(holderPid)),
			want:  Live, reason: "its start time cannot be read: cannot read /proc/4242/stat",
		},
		{
			name:  "start-time-fence-matches",
			procs: procs(holderPid, alive),
			lock:  pidLock(fenced(holderPid, alive.Start, hereBoot)),
			want:  Live, reason: "start time matches the record",
		},
		{
			name:  "started-within-recycle-margin",
			procs: procs(holderPid, runningSince(written.Add(RecycleMargin))),
			lock:  pidLock(pidHolder(holderPid)),
			want:  Live, reason: "is running",
		},
		{
			name:  "started-after-record-but-btime-unknown",
			host:  func(h *Host) { h.BootTime = time.Time{} },
			procs: procs(holderPid, runningSince(written.Add(time.Hour))),
			lock:  pidLock(pidHolder(holderPid)),
			want:  Live, reason: "is running",
		},
		{
			name:  "registry-b-holder-gone-writer-running",
			procs: procs(otherPid, alive),
			lock: with(lockB(holderB(holderPid, hereScope)), func(l *scan.Lock) {
				l.Writers = []scan.Writer{writer(holderB(holderPid, ""), otherPid)}
			}),
			want: Live, reason: "its writer pid 4343 (registry.sh) is still running",
		},
		{
			name:  "registry-b-no-holder-writer-running",
			procs: procs(otherPid, alive),
			lock: with(dirLock(scan.FormatRegistryB), func(l *scan.Lock) {
				l.Writers = []scan.Writer{writer(holderB(holderPid, ""), otherPid)}
			}),
			want: Live, reason: "writer pid 4343",
		},
		{
			name:  "registry-b-record-being-published",
			procs: procs(holderPid, alive),
			lock:  emptyDir(publishB(holderB(holderPid, hereScope))),
			want:  Live, reason: "pid 4242 is publishing one",
		},
	})
}

// TestProperLockfileRefreshed: npm's proper-lockfile holder refreshes its
// empty lock directory's mtime while it runs: a recent mtime, or one a
// little ahead of this clock (proper-lockfile rounds it up to the second),
// is a live holder, with nothing to remove.
func TestProperLockfileRefreshed(t *testing.T) {
	for _, d := range []time.Duration{-ProperLockfileAhead + 100*time.Millisecond, -900 * time.Millisecond, 0, 3 * time.Second, ProperLockfileFresh - time.Second} {
		l := with(emptyDir(), func(l *scan.Lock) {
			l.Producer = scan.ProducerProperLockfile
			l.Info.Mtime = time.Now().Add(-d)
		})
		j := &Judge{Host: testHost(), Probe: &fakeProbe{t: t}}
		got := j.Judge(l)
		checkResult(t, "proper-lockfile", got, l)
		if got.Verdict != Live || !strings.Contains(got.Reason, "refreshed") {
			t.Errorf("Judge(proper-lockfile refreshed %s ago) = %s (%s), want live", d, got.Verdict, got.Reason)
		}
	}
}

func TestJudgeGone(t *testing.T) {
	gone := holderB(holderPid, hereScope)
	run(t, []judgeCase{
		{
			name: "pid-file-absent",
			lock: pidLock(pidHolder(holderPid)),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(pidPath)),
		},
		{
			name: "uucp-absent",
			lock: pidFile(scan.FormatUUCP, "      4242\n", pidHolder(holderPid), nil),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(pidPath)),
		},
		{
			name:  "zombie",
			procs: procs(holderPid, Proc{State: StateZombie, Comm: "registry.sh", HasStart: true, Start: alive.Start}),
			lock:  pidLock(pidHolder(holderPid)),
			want:  Gone, reason: "pid 4242 is a zombie (registry.sh)",
			remove: steps(rm(pidPath)),
		},
		{
			name:  "zombie-fenced",
			procs: procs(holderPid, Proc{State: StateZombie, Comm: "registry.sh", HasStart: true, Start: alive.Start}),
			lock:  pidLock(fenced(holderPid, alive.Start, hereBoot)),
			want:  Gone, reason: "is a zombie",
			remove: steps(rm(pidPath)),
		},
		{
			// The running process started earlier than the recorded one, so
			// only the start-time fence tells them apart.
			name:  "start-time-mismatch",
			procs: procs(holderPid, alive),
			lock:  pidLock(fenced(holderPid, alive.Start+500, hereBoot)),
			want:  Gone, reason: "not the recorded",
			remove: steps(rm(pidPath)),
		},
		{
			// Another boot, and the pid is another process here.
			name:  "boot-id-mismatch",
			procs: procs(holderPid, alive),
			lock:  pidLock(fenced(holderPid, alive.Start+1, "0f0e0d0c-0000-4000-8000-000000000000")),
			want:  Gone, reason: "from boot 0f0e0d0c-0000-4000-8000-000000000000",
			remove: steps(rm(pidPath)),
		},
		{
			// Another boot, and no such pid.
			name: "boot-id-mismatch-absent",
			lock: pidLock(fenced(holderPid, alive.Start, "0f0e0d0c-0000-4000-8000-000000000000")),
			want: Gone, reason: "from boot 0f0e0d0c-0000-4000-8000-000000000000, and this is boot " + hereBoot + ": its holder ended with that boot",
			remove: steps(rm(pidPath)),
		},
		{
			name: "registry-a-absent",
			lock: lockA(holderA(holderPid, here)),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(in(regDir, lockName+".holder")), rmdir(lockPath)),
		},
		{
			name: "registry-b-absent-with-scope",
			lock: lockB(gone),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(in(lockPath, "holder."+gone.Token)), rmdir(lockPath)),
		},
		{
			name:  "registry-b-writers-gone-too",
			procs: procs(otherPid, Proc{State: StateZombie}),
			lock: with(lockB(gone), func(l *scan.Lock) {
				l.Writers = []scan.Writer{writer(gone, otherPid), writer(gone, 5000)}
			}),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(
				rm(in(lockPath, "holder."+gone.Token)),
				rm(in(lockPath, writer(gone, otherPid).Name)),
				rm(in(lockPath, writer(gone, 5000).Name)),
				rmdir(lockPath)),
		},
		{
			name: "registry-b-break-no-is-noted",
			lock: lockB(modified(holderB(holderPid, hereScope), func(h *scan.Holder) { h.Break = "no" })),
			want: Gone, reason: "is not running",
			remove: steps(rm(in(lockPath, "holder."+gone.Token)), rmdir(lockPath)),
			note:   "break no",
		},
		{
			name: "other-entries-are-noted",
			lock: with(lockB(gone), func(l *scan.Lock) { l.Others = []string{"notes.txt"} }),
			want: Gone, reason: "is not running",
			remove: steps(rm(in(lockPath, "holder."+gone.Token)), rmdir(lockPath)),
			note:   "also holds 1 other entries (notes.txt)",
		},
		{
			name:  "stale-claim-beside-is-noted",
			procs: procs(breaker, alive),
			lock:  with(lockA(holderA(holderPid, here)), func(l *scan.Lock) { l.Claims = []scan.Claim{breakA(breaker, holderA(otherPid, here))} }),
			want:  Gone, reason: "pid 4242 is not running",
			remove: steps(rm(in(regDir, lockName+".holder")), rmdir(lockPath)),
			note:   "side file " + breakAName(breaker) + ": break by pid 777 (running)",
		},
		{
			name: "pid-max-itself-is-a-pid",
			lock: pidLock(pidHolder(testPidMax)),
			want: Gone, reason: "pid 32768 is not running",
			remove: steps(rm(pidPath)),
		},
	})
}

func TestJudgeRecycled(t *testing.T) {
	run(t, []judgeCase{
		{
			name:  "started-after-record-mtime",
			procs: procs(holderPid, runningSince(written.Add(RecycleMargin+time.Second))),
			lock:  pidLock(pidHolder(holderPid)),
			want:  Recycled, reason: "the pid was reused",
		},
		{
			// The record was rewritten (mtime now) but its token says the lock
			// was taken an hour ago: the process started after that.
			name:  "started-after-token-since",
			procs: procs(holderPid, runningSince(written.Add(-30*time.Minute))),
			lock: with(lockA(modified(holderA(holderPid, here), func(h *scan.Holder) { h.Since = written.Add(-time.Hour) })),
				func(l *scan.Lock) { l.Info.Btime, l.Info.Mtime = written.Add(-2*time.Hour), written.Add(-2*time.Hour) }),
			want: Recycled, reason: "the pid was reused",
		},
		{
			name:  "eperm-started-after-record",
			procs: procs(holderPid, Proc{State: StateRunning, Denied: true, HasStart: true, Start: ticksAt(written.Add(time.Hour))}),
			lock:  pidLock(pidHolder(holderPid)),
			want:  Recycled, reason: "the pid was reused",
		},
	})
}

func TestJudgeOwnerless(t *testing.T) {
	b := holderB(holderPid, hereScope)
	run(t, []judgeCase{
		{
			name: "empty-file",
			lock: pidFile(scan.FormatEmpty, "", nil, nil),
			want: Ownerless, reason: "the lock file is empty",
		},
		{
			name: "no-pid-0",
			lock: pidFile(scan.FormatNoPid, "0\n", nil, nil),
			want: Ownerless, reason: "the lock file says 0",
			remove: steps(rm(pidPath)),
		},
		{
			name: "malformed-record",
			lock: pidFile(scan.FormatUnrecognized, "hello\n", nil, malformed),
			want: Ownerless, reason: "is malformed: the content is not a pid",
		},
		{
			name: "malformed-record-wrapped",
			lock: pidFile(scan.FormatUnrecognized, "hello\n", nil, fmt.Errorf("reading %q: %w", pidPath, malformed)),
			want: Ownerless, reason: "is malformed",
		},
		{
			name: "registry-b-malformed-holder",
			lock: dirLock(scan.FormatRegistryB, scan.Record{File: lockName + "/holder." + b.Token, Info: fileAt(written), Raw: []byte("break maybe\n"),
				Err: &scan.FormatError{Format: scan.FormatRegistryB, Reason: "4 lines, want 4 to 6"}}),
			want: Ownerless, reason: "is malformed",
			remove: steps(rm(in(lockPath, "holder."+b.Token)), rmdir(lockPath)),
		},
		{
			name: "empty-dir",
			lock: emptyDir(),
			want: Ownerless, reason: "the lock directory is empty",
			remove: steps(rmdir(lockPath)),
		},
		{
			// An mtime far ahead of the clock tells nothing of a refresh.
			name: "proper-lockfile-ahead",
			lock: with(emptyDir(), func(l *scan.Lock) { l.Producer = scan.ProducerProperLockfile; l.Info.Mtime = time.Now().Add(time.Hour) }),
			want: Ownerless, reason: "ahead of this clock",
			remove: steps(rmdir(lockPath)),
		},
		{
			// npm's proper-lockfile, its mtime left alone for long: owner-less,
			// never gone (the stale interval is not recorded).
			name: "proper-lockfile-unrefreshed",
			lock: with(emptyDir(), func(l *scan.Lock) { l.Producer = scan.ProducerProperLockfile }),
			want: Ownerless, reason: "last refreshed",
			remove: steps(rmdir(lockPath)),
		},
		{
			// The holder beside the directory was left by an earlier lock:
			// without the rule its dead pid would read as gone, no caveat.
			name: "registry-a-holder-older-than-dir-btime",
			lock: with(lockA(holderA(holderPid, here)), func(l *scan.Lock) { l.Holders[0].Info.Mtime = dirMade.Add(-time.Minute) }),
			want: Ownerless, reason: "is older than the lock directory",
			remove: steps(rm(in(regDir, lockName+".holder")), rmdir(lockPath)),
		},
		{
			name:  "registry-a-holder-older-than-dir-mtime-no-btime",
			procs: procs(holderPid, alive),
			lock: with(lockA(holderA(holderPid, here)), func(l *scan.Lock) {
				l.Info.Btime = time.Time{}
				l.Holders[0].Info.Mtime = dirMade.Add(-time.Second)
			}),
			want: Ownerless, reason: "is older than the lock directory",
			remove: steps(rm(in(regDir, lockName+".holder")), rmdir(lockPath)),
		},
		{
			name: "registry-b-only-dead-writer-evidence",
			lock: with(dirLock(scan.FormatRegistryB), func(l *scan.Lock) { l.Writers = []scan.Writer{writer(b, otherPid)} }),
			want: Ownerless, reason: "only writer evidence of holders that are gone",
			remove: steps(rm(in(lockPath, writer(b, otherPid).Name)), rmdir(lockPath)),
		},
		{
			name: "dir-with-unknown-entries-only",
			lock: with(dirLock(scan.FormatUnrecognized), func(l *scan.Lock) { l.Others = []string{"notes.txt"} }),
			want: Ownerless, reason: "holds no holder record (it holds 1 other entries)",
			note: "inspect it by hand",
		},
		{
			name: "malformed-holder-and-unknown-entries",
			lock: with(dirLock(scan.FormatRegistryB, scan.Record{File: lockName + "/holder.x", Err: malformed}), func(l *scan.Lock) {
				l.Others = []string{"core"}
			}),
			want: Ownerless, reason: "is malformed",
			note: "inspect it by hand",
		},
		{
			name: "publisher-gone",
			lock: emptyDir(publishB(b)),
			want: Ownerless, reason: "the lock directory is empty",
			remove: steps(rmdir(lockPath)),
			note:   "publish by pid 4242 (not running)",
		},
		{
			name: "file-lock-without-record",
			lock: with(pidFile(scan.FormatEmpty, "", nil, nil), func(l *scan.Lock) { l.Holders = nil }),
			want: Ownerless, reason: "there is no owner record",
		},
	})
}

func TestJudgeForeign(t *testing.T) {
	run(t, []judgeCase{
		{
			// Pid 4242 is not running here: judged locally it would be gone.
			name: "registry-a-other-host",
			lock: lockA(holderA(holderPid, "beta")),
			want: Foreign, reason: "names host beta, and this is alpha",
			noProbe: true,
		},
		{
			name: "pid-kv-other-host",
			lock: pidFile(scan.FormatKeyValue, "pid=4242\nhost=beta\n", &scan.Holder{Pid: holderPid, PidText: "4242", Host: "beta"}, nil),
			want: Foreign, reason: "names host beta",
			noProbe: true,
		},
		{
			name: "registry-b-scope-mismatch",
			lock: lockB(holderB(holderPid, otherScope)),
			want: Foreign, reason: "its scope is not this machine's",
			noProbe: true,
		},
		{
			name:       "pid-namespace-mismatch",
			lock:       pidLock(modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.PidNS = otherNS })),
			namespaces: map[string]bool{otherNS: true},
			want:       Foreign, reason: "names pid namespace pid:[4026532999]",
			noProbe: true,
		},
		{
			name: "pid-namespace-unreadable-here",
			host: func(h *Host) { h.PidNS = "" },
			lock: pidLock(fenced(holderPid, alive.Start, hereBoot)),
			want: Foreign, reason: "names pid namespace",
			noProbe: true,
		},
	})
}

func TestJudgeUnknown(t *testing.T) {
	b := holderB(holderPid, hereScope)
	goneWith := func(f func(*scan.Lock)) *scan.Lock { return with(lockB(b), f) }
	run(t, []judgeCase{
		{
			name:  "probe-cannot-tell",
			procs: procs(holderPid, Proc{State: StateUnknown, Err: errors.New("cannot signal pid 4242: EIO")}),
			lock:  pidLock(pidHolder(holderPid)),
			want:  Unknown, reason: "cannot tell whether pid 4242 is running: cannot signal pid 4242: EIO",
		},
		{
			name: "pid-0",
			lock: lockA(holderA(0, here)),
			want: Unknown, reason: "pid 0 is out of range (1 to 32768)",
			noProbe: true,
		},
		{
			name: "pid-minus-1",
			lock: pidLock(pidHolder(-1)),
			want: Unknown, reason: "pid -1 is out of range",
			noProbe: true,
		},
		{
			name: "pid-above-pid-max",
			lock: pidLock(pidHolder(testPidMax + 1)),
			want: Unknown, reason: "pid 32769 is out of range",
			noProbe: true,
		},
		{
			name: "pid-overflowed",
			lock: pidFile(scan.FormatPid, "99999999999999999999\n", &scan.Holder{Pid: math.MaxInt64, PidText: "99999999999999999999"}, nil),
			want: Unknown, reason: "pid 99999999999999999999 is out of range",
			noProbe: true,
		},
		{
			name: "pid-min-int64",
			lock: pidLock(pidHolder(math.MinInt64)),
			want: Unknown, reason: "is out of range",
			noProbe: true,
		},
		{
			name: "lock-unreadable",
			lock: &scan.Lock{Path: lockPath, Dir: regDir, Name: lockName, Kind: scan.KindOther, Format: scan.FormatUnrecognized, Err: errEACCES},
			want: Unknown, reason: "cannot read the lock: open " + lockPath + ": permission denied",
			noProbe: true,
		},
		{
			name: "record-unreadable-not-a-format-error",
			lock: pidFile(scan.FormatUnrecognized, "", nil, &fs.PathError{Op: "open", Path: pidPath, Err: syscall.EACCES}),
			want: Unknown, reason: "cannot read the holder record " + pidName,
			noProbe: true,
		},
		{
			name: "registry-a-holder-unreadable",
			lock: dirLock(scan.FormatRegistryA, scan.Record{File: lockName + ".holder", Err: errEACCES}),
			want: Unknown, reason: "cannot read the holder record",
			noProbe: true,
		},
		{
			name: "symlink",
			lock: &scan.Lock{Path: pidPath, Dir: runDir, Name: pidName, Kind: scan.KindSymlink, Info: fsx.Stat{Mode: fs.ModeSymlink | 0o777}},
			want: Unknown, reason: "symbolic link",
			noProbe: true,
		},
		{
			name: "fifo",
			lock: &scan.Lock{Path: pidPath, Dir: runDir, Name: pidName, Kind: scan.KindOther, Info: fsx.Stat{Mode: fs.ModeNamedPipe | 0o644}},
			want: Unknown, reason: "the lock is a named pipe",
			noProbe: true,
		},
		{
			name: "socket",
			lock: &scan.Lock{Path: pidPath, Dir: runDir, Name: pidName, Kind: scan.KindOther, Info: fsx.Stat{Mode: fs.ModeSocket | 0o644}},
			want: Unknown, reason: "the lock is a socket",
			noProbe: true,
		},
		{
			name: "device",
			lock: &scan.Lock{Path: pidPath, Dir: runDir, Name: pidName, Kind: scan.KindOther, Info: fsx.Stat{Mode: fs.ModeDevice | fs.ModeCharDevice | 0o644}},
			want: Unknown, reason: "the lock is a device",
			noProbe: true,
		},
		{
			name: "registry-b-no-scope-absent",
			lock: lockB(holderB(holderPid, "")),
			want: Unknown, reason: "the record has no scope",
		},
		{
			name: "scope-not-computable-here",
			host: func(h *Host) { h.Scope, h.ScopeErr = "", errors.New("/etc/machine-id cannot be read") },
			lock: lockB(b),
			want: Unknown, reason: "this host's cannot be computed (/etc/machine-id cannot be read)",
			noProbe: true,
		},
		{
			name: "host-name-unreadable",
			host: func(h *Host) { h.Name = "" },
			lock: lockA(holderA(holderPid, here)),
			want: Unknown, reason: "this host's name cannot be read",
			noProbe: true,
		},
		{
			name: "boot-id-unreadable",
			host: func(h *Host) { h.BootID = "" },
			lock: pidLock(fenced(holderPid, alive.Start, hereBoot)),
			want: Unknown, reason: "this boot's id cannot be read",
			noProbe: true,
		},
		{
			name:  "fenced-but-start-unreadable",
			procs: procs(holderPid, Proc{State: StateRunning, Denied: true, Err: errors.New("hidepid")}),
			lock:  pidLock(fenced(holderPid, alive.Start, hereBoot)),
			want:  Unknown, reason: "its start time cannot be read (hidepid)",
		},
		{
			name: "registry-b-holder-gone-writer-pending",
			lock: goneWith(func(l *scan.Lock) { l.Pending = []string{"pending." + b.Token + ".sync"} }),
			want: Unknown, reason: "pending." + b.Token + ".sync announces a writer",
		},
		{
			name: "registry-b-no-holder-writer-pending",
			lock: with(dirLock(scan.FormatRegistryB), func(l *scan.Lock) { l.Pending = []string{"pending." + b.Token + ".sync"} }),
			want: Unknown, reason: "announces a writer",
		},
		{
			name: "registry-b-holder-gone-writer-pid-unusable",
			lock: goneWith(func(l *scan.Lock) { l.Writers = []scan.Writer{{Name: "writer.garbage"}} }),
			want: Unknown, reason: "writer.garbage names no usable pid",
		},
		{
			name:  "registry-b-holder-gone-writer-cannot-tell",
			procs: procs(otherPid, Proc{State: StateUnknown, Err: errors.New("EIO")}),
			lock:  goneWith(func(l *scan.Lock) { l.Writers = []scan.Writer{writer(b, otherPid)} }),
			want:  Unknown, reason: "cannot tell whether writer pid 4343 is running: EIO",
		},
		{
			name:  "publisher-cannot-tell",
			procs: procs(holderPid, Proc{State: StateUnknown, Err: errors.New("EIO")}),
			lock:  emptyDir(publishB(b)),
			want:  Unknown, reason: "cannot tell whether the publisher",
		},
	})
}

func TestJudgeClaimed(t *testing.T) {
	a := holderA(holderPid, here)
	b := holderB(holderPid, hereScope)
	run(t, []judgeCase{
		{
			name:  "break-under-way",
			procs: procs(breaker, alive),
			lock:  emptyDir(breakA(breaker, a)),
			want:  Claimed, reason: "a break of " + breakAName(breaker) + " by pid 777 (running) is under way",
		},
		{
			name: "break-by-unnamed-maker",
			lock: emptyDir(breakA(0, a)),
			want: Claimed, reason: "by an unnamed process is under way or its maker cannot be checked",
		},
		{
			name:  "break-maker-cannot-tell",
			procs: procs(breaker, Proc{State: StateUnknown, Err: errors.New("EIO")}),
			lock:  emptyDir(breakA(breaker, a)),
			want:  Claimed, reason: "(state unknown) is under way",
		},
		{
			name: "abandoned-break-of-gone-record-registry-a",
			lock: emptyDir(breakA(breaker, a)),
			want: Claimed, reason: "was abandoned; the record it holds is gone",
			remove: steps(rmdir(lockPath), rm(in(regDir, breakAName(breaker)))),
		},
		{
			name:  "abandoned-break-by-zombie",
			procs: procs(breaker, Proc{State: StateZombie}),
			lock:  emptyDir(breakA(breaker, a)),
			want:  Claimed, reason: "by pid 777 (a zombie) was abandoned",
			remove: steps(rmdir(lockPath), rm(in(regDir, breakAName(breaker)))),
		},
		{
			name: "abandoned-break-of-gone-record-registry-b",
			lock: emptyDir(breakB(breaker, b)),
			want: Claimed, reason: "was abandoned; the record it holds is gone",
			remove: steps(rmdir(lockPath), rm(in(regDir, breakBName(breaker, b)))),
		},
		{
			name:  "abandoned-break-of-live-record-registry-a",
			procs: procs(holderPid, alive),
			lock:  emptyDir(breakA(breaker, a)),
			want:  Claimed, reason: "the record it holds is live",
			remove: steps(restore(in(regDir, breakAName(breaker)), lockPath+".holder")),
		},
		{
			name:  "abandoned-break-of-live-record-registry-b",
			procs: procs(holderPid, alive),
			lock:  emptyDir(breakB(breaker, b)),
			want:  Claimed, reason: "the record it holds is live",
			remove: steps(restore(in(regDir, breakBName(breaker, b)), lockPath+"/holder."+b.Token)),
		},
		{
			name: "abandoned-break-of-foreign-record",
			lock: emptyDir(breakA(breaker, holderA(holderPid, "beta"))),
			want: Claimed, reason: "the record it holds is foreign",
		},
		{
			name: "abandoned-break-of-malformed-record",
			lock: emptyDir(scan.Claim{Kind: scan.ClaimBreak, By: breaker, Record: scan.Record{File: breakAName(breaker), Info: fileAt(written), Raw: []byte("token x\n"), Err: malformed}}),
			want: Claimed, reason: "the record it holds is ownerless",
		},
		{
			name: "orphan-pid-file-break-of-gone-record",
			lock: orphan(scan.FormatUUCP, breakUUCP(breaker, holderPid)),
			want: Claimed, reason: "the lock itself is gone; a break of " + pidBreakName,
			remove: steps(rm(in(runDir, pidBreakName))),
		},
		{
			name:  "orphan-pid-file-break-of-live-record",
			procs: procs(holderPid, alive),
			lock:  orphan(scan.FormatUUCP, breakUUCP(breaker, holderPid)),
			want:  Claimed, reason: "the record it holds is live",
			remove: steps(restore(in(runDir, pidBreakName), pidPath)),
		},
		{
			name:  "orphan-registry-a-break-of-live-record",
			procs: procs(holderPid, alive),
			lock:  with(emptyDir(breakA(breaker, a)), func(l *scan.Lock) { l.Kind, l.Info, l.Format = scan.KindMissing, fsx.Stat{}, scan.FormatRegistryA }),
			want:  Claimed, reason: "it cannot be put back because the lock is gone",
		},
		{
			name:  "release-staging-under-way",
			procs: procs(holderPid, alive),
			lock:  emptyDir(releasingA(a)),
			want:  Claimed, reason: "a release of " + releasingName(holderPid) + " by pid 4242 (running) is under way",
		},
		{
			name: "release-staging-abandoned",
			lock: emptyDir(releasingA(a)),
			want: Claimed, reason: "was abandoned; the record it holds is gone",
			remove: steps(rmdir(lockPath), rm(in(regDir, releasingName(holderPid)))),
		},
		{
			name: "orphan-release-staging-abandoned",
			lock: with(emptyDir(releasingA(a)), func(l *scan.Lock) { l.Kind, l.Info, l.Format = scan.KindMissing, fsx.Stat{}, scan.FormatRegistryA }),
			want: Claimed, reason: "the lock itself is gone",
			remove: steps(rm(in(regDir, releasingName(holderPid)))),
		},
		{
			name:  "orphan-release-of-live-holder",
			procs: procs(holderPid, alive),
			lock: with(emptyDir(claim(scan.ClaimRelease, releasingName(5000), 5000, rawA(a), a)), func(l *scan.Lock) {
				l.Kind, l.Info = scan.KindMissing, fsx.Stat{}
			}),
			want: Claimed, reason: "that holder may believe it still holds the lock",
		},
		{
			name:  "two-side-files",
			procs: procs(holderPid, alive),
			lock:  emptyDir(breakA(breaker, a), releasingA(a)),
			want:  Claimed, reason: "2 side files and no holder",
		},
	})
}

func TestJudgeMostHeldRecordWins(t *testing.T) {
	gone, live := holderB(holderPid, hereScope), holderB(otherPid, hereScope)
	foreign := holderB(5000, otherScope)
	run(t, []judgeCase{
		{
			name:  "gone-then-live",
			procs: procs(otherPid, alive),
			lock:  lockB(gone, live),
			want:  Live, reason: "pid 4343",
		},
		{
			name:  "live-then-gone",
			procs: procs(otherPid, alive),
			lock:  lockB(live, gone),
			want:  Live, reason: "pid 4343",
		},
		{
			name: "gone-then-foreign",
			lock: lockB(gone, foreign),
			want: Foreign, reason: "its scope is not",
		},
		{
			name:  "unknown-beats-foreign",
			procs: procs(holderPid, Proc{State: StateUnknown}),
			lock:  lockB(foreign, gone),
			want:  Unknown, reason: "cannot tell whether pid 4242",
		},
		{
			name: "malformed-beats-gone",
			lock: with(lockB(gone), func(l *scan.Lock) {
				l.Holders = append(l.Holders, scan.Record{File: lockName + "/holder.bad", Err: malformed})
			}),
			want: Ownerless, reason: "is malformed",
			remove: steps(rm(in(lockPath, "holder."+gone.Token)), rm(in(lockPath, "holder.bad")), rmdir(lockPath)),
		},
		{
			name: "both-gone",
			lock: lockB(gone, holderB(otherPid, hereScope)),
			want: Gone, reason: "is not running",
			remove: steps(rm(in(lockPath, "holder."+gone.Token)), rm(in(lockPath, "holder."+holderB(otherPid, "").Token)), rmdir(lockPath)),
		},
	})
}

// TestJudgeNeverProbesOutOfRange puts pids that are not process ids, or are
// above pid_max, everywhere a pid can come from. The fake probe fails the
// test if any of them reaches it: kill(0, 0) and kill(-1, 0) address process
// groups, and kill(-1, 0) as root succeeds for every process.
func TestJudgeNeverProbesOutOfRange(t *testing.T) {
	for _, pid := range []int64{0, -1, -2, math.MinInt64, testPidMax + 1, math.MaxInt64} {
		// Every pid in range that these locks name is running (holderPid)
		// or gone with a scope (otherPid), so no verdict here may be gone
		// unless an out-of-range pid was taken as proof.
		live := holderA(holderPid, here)
		gone := holderB(otherPid, hereScope)
		locks := map[string]*scan.Lock{
			"pid-file":         pidLock(pidHolder(pid)),
			"registry-a":       lockA(holderA(pid, here)),
			"registry-b":       lockB(holderB(pid, hereScope)),
			"writer":           with(lockB(gone), func(l *scan.Lock) { l.Writers = []scan.Writer{writer(gone, pid)} }),
			"writer-no-holder": with(dirLock(scan.FormatRegistryB), func(l *scan.Lock) { l.Writers = []scan.Writer{writer(gone, pid)} }),
			"break-claim":      emptyDir(breakA(pid, live)),
			"claimed-record":   emptyDir(breakA(breaker, holderA(pid, here))),
			"release-claim":    emptyDir(claim(scan.ClaimRelease, releasingName(pid), pid, rawA(live), live)),
			"publish-claim":    emptyDir(claim(scan.ClaimPublish, lockName+".pub.x", pid, rawB(gone), gone)),
			"claim-note":       with(lockA(live), func(l *scan.Lock) { l.Claims = []scan.Claim{breakA(pid, gone)} }),
			"orphan":           orphan(scan.FormatPid, claim(scan.ClaimBreak, pidBreakName, pid, "4242\n", pidHolder(holderPid))),
		}
		for where, l := range locks {
			name := fmt.Sprintf("%s/pid=%d", where, pid)
			t.Run(name, func(t *testing.T) {
				p := &fakeProbe{t: t, procs: procs(holderPid, alive)}
				got := (&Judge{Host: testHost(), Probe: p}).Judge(l)
				checkResult(t, name, got, l)
				for _, c := range p.calls {
					if int64(c) == pid {
						t.Errorf("Judge(%s) probed pid %d, want it never probed", name, c)
					}
				}
				if got.Verdict == Gone || len(got.Remove) > 0 {
					t.Errorf("Judge(%s) = %s (%s) with Remove %v, want a pid out of range never to prove a holder gone", name, got.Verdict, got.Reason, got.Remove)
				}
			})
		}
	}
}

// TestCachingProbe checks that a registry where many locks share a holder
// asks the kernel once per pid.
func TestCachingProbe(t *testing.T) {
	f := &fakeProbe{t: t, procs: procs(holderPid, alive)}
	c := &CachingProbe{Next: f}
	for i := 0; i < 3; i++ {
		if got := c.Probe(holderPid); got != alive {
			t.Errorf("Probe(%d) = %+v, want %+v", holderPid, got, alive)
		}
		if got := c.Probe(otherPid); got.State != StateAbsent {
			t.Errorf("Probe(%d) = %+v, want absent", otherPid, got)
		}
	}
	if want := []int{holderPid, otherPid}; !reflect.DeepEqual(f.calls, want) {
		t.Errorf("the kernel was asked about %v, want %v (once each)", f.calls, want)
	}
}

func TestParse(t *testing.T) {
	for _, v := range All {
		if got, ok := Parse(string(v)); !ok || got != v {
			t.Errorf("Parse(%q) = %q, %v, want %q, true", v, got, ok, v)
		}
		if _, ok := heldness[v]; !ok {
			t.Errorf("heldness[%q] is missing: every verdict must be ordered", v)
		}
	}
	if len(All) != len(heldness) {
		t.Errorf("len(All) = %d, want %d (one per verdict in heldness)", len(All), len(heldness))
	}
	for _, s := range []string{"", "Live", "dead", "live "} {
		if got, ok := Parse(s); ok {
			t.Errorf("Parse(%q) = %q, true, want false", s, got)
		}
	}
}

func TestHostStarted(t *testing.T) {
	h := testHost()
	for _, tc := range []struct {
		name  string
		host  Host
		ticks uint64
		want  time.Time
	}{
		{"boot", h, 0, bootTime},
		{"ten-hours", h, 3600_00 * 10, bootTime.Add(10 * time.Hour)},
		{"sub-second", h, 1234, bootTime.Add(12340 * time.Millisecond)},
		{"no-boot-time", Host{Ticks: 100}, 1234, time.Time{}},
		{"no-ticks", Host{BootTime: bootTime}, 1234, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.host.Started(tc.ticks); !got.Equal(tc.want) {
				t.Errorf("Started(%d) = %v, want %v", tc.ticks, got, tc.want)
			}
		})
	}
}

// staleClaim is c with a record written before the lock directory was made.
func staleClaim(c scan.Claim) scan.Claim {
	c.Record.Info = fileAt(dirMade.Add(-time.Hour))
	return c
}

// Regressions found in review: each row failed on the code before its fix.
func TestJudgeRegressions(t *testing.T) {
	a := holderA(holderPid, here)
	b := holderB(holderPid, hereScope)
	noScope := holderB(holderPid, "")
	run(t, []judgeCase{
		{
			// A breaker that died after its own rmdir leaves a claim; the
			// directory now at the path was made later by someone else.
			// Finishing the old claim would rmdir the newcomer's lock.
			name: "claim-older-than-directory-is-not-this-locks",
			lock: emptyDir(staleClaim(breakA(breaker, a))),
			want: Ownerless, reason: "the lock directory is empty",
			remove: steps(rmdir(lockPath)),
			note:   "belongs to an earlier lock",
		},
		{
			name: "release-staging-older-than-directory-is-not-this-locks",
			lock: emptyDir(staleClaim(releasingA(a))),
			want: Ownerless, reason: "the lock directory is empty",
			remove: steps(rmdir(lockPath)),
			note:   "belongs to an earlier lock",
		},
		{
			name:  "live-claim-older-than-directory-is-not-restored",
			procs: procs(holderPid, alive),
			lock:  emptyDir(staleClaim(breakB(breaker, b))),
			want:  Ownerless, reason: "the lock directory is empty",
			remove: steps(rmdir(lockPath)),
		},
		{
			name:  "malformed-holder-with-running-writer-is-live",
			procs: procs(otherPid, alive),
			lock: with(dirLock(scan.FormatRegistryB, scan.Record{File: lockName + "/holder." + b.Token, Info: fileAt(written), Raw: []byte("token x\n"), Err: malformed}), func(l *scan.Lock) {
				l.Writers = []scan.Writer{writer(b, otherPid)}
			}),
			want: Live, reason: "writer pid 4343",
		},
		{
			name:  "running-writer-outweighs-a-claim",
			procs: procs(otherPid, alive),
			lock: with(emptyDir(breakB(breaker, b)), func(l *scan.Lock) {
				l.Format = scan.FormatRegistryB
				l.Writers = []scan.Writer{writer(b, otherPid)}
			}),
			want: Live, reason: "writer pid 4343",
		},
		{
			name:  "no-scope-zombie-is-unknown",
			procs: procs(holderPid, Proc{State: StateZombie, Comm: "registry.sh"}),
			lock:  lockB(noScope),
			want:  Unknown, reason: "may have been written in another pid namespace",
		},
	})
}

func TestStartedDoesNotOverflow(t *testing.T) {
	h := testHost()
	threeYears := 3 * 365 * 24 * time.Hour
	ticks := uint64(threeYears / (10 * time.Millisecond))
	if got, want := h.Started(ticks), bootTime.Add(threeYears); !got.Equal(want) {
		t.Errorf("Started(%d) = %v, want %v", ticks, got, want)
	}
}

// A release claim and a build beside a lock that is gone: the build's maker
// is gone, so the build is debris even though its record names a live
// holder (acquire acts for a shell that may well still run).
func TestJudgeManySideFilesWithBuild(t *testing.T) {
	a := holderA(holderPid, here)
	b := holderB(otherPid, hereScope)
	build := buildOf(lockName, b.Token, 778, b)
	run(t, []judgeCase{{
		name:  "release-of-gone-and-build-of-gone-maker",
		procs: procs(otherPid, alive),
		lock:  orphan(scan.FormatRegistryA, releasingA(a), build),
		want:  Claimed, reason: "all abandoned",
		remove: steps(rm(in(runDir, releasingName(holderPid))),
			rm(in(runDir, lockName+".new."+b.Token+".778/holder")), rmdir(in(runDir, lockName+".new."+b.Token+".778"))),
	}})
}

// TestJudgeOnlyLockctlBuildsAreDebris: a side file named like one of
// lockctl's unpublished builds (<lock>.new.<token>.<maker>) whose maker is
// gone is debris only when it is one: a directory, empty or holding only a
// lockctl record, whole or cut short. Anything else is noted and never
// given a step, however gone its maker (issue 28, case 6).
func TestJudgeOnlyLockctlBuildsAreDebris(t *testing.T) {
	a := holderA(holderPid, here)
	b := holderB(otherPid, hereScope)
	const tok = "778.0123456789abcdef0123456789abcdef.1"
	name := lockName + ".new." + tok + ".778"
	gone := func(c scan.Claim) *scan.Lock {
		return with(lockA(a), func(l *scan.Lock) { l.Claims = []scan.Claim{c} })
	}
	build := func(f func(*scan.Claim)) scan.Claim {
		c := buildOf(lockName, tok, 778, fenced(778, 1, hereBoot))
		f(&c)
		return c
	}
	steps := steps(rm(in(regDir, name+"/holder")), rmdir(in(regDir, name)))
	run(t, []judgeCase{
		{
			name:   "a-build-of-a-gone-maker-is-debris",
			procs:  procs(holderPid, alive),
			lock:   gone(build(func(*scan.Claim) {})),
			want:   Live,
			debris: steps,
		},
		{
			name:  "an-empty-build-is-debris",
			procs: procs(holderPid, alive),
			lock: gone(build(func(c *scan.Claim) {
				c.Record.Raw, c.Record.Holder, c.Record.Err = nil, nil, &fs.PathError{Op: "open", Path: name + "/holder", Err: fs.ErrNotExist}
			})),
			want:   Live,
			debris: steps,
		},
		{
			name:  "a-record-cut-short-by-a-killed-maker-is-debris",
			procs: procs(holderPid, alive),
			lock: gone(build(func(c *scan.Claim) {
				c.Record.Raw, c.Record.Holder, c.Record.Err = []byte(scan.LockctlMagic+"\ntoken 778.0123"), nil, &scan.FormatError{Format: scan.FormatLockctl, Reason: "cut short"}
			})),
			want:   Live,
			debris: steps,
		},
		{
			name:  "an-empty-record-is-debris",
			procs: procs(holderPid, alive),
			lock: gone(build(func(c *scan.Claim) {
				c.Record.Raw, c.Record.Holder, c.Record.Err = nil, nil, &scan.FormatError{Format: scan.FormatEmpty, Reason: "empty"}
			})),
			want:   Live,
			debris: steps,
		},
		{
			name:   "a-regular-file-is-not",
			procs:  procs(holderPid, alive),
			lock:   gone(build(func(c *scan.Claim) { c.Record.File = name })),
			want:   Live,
			debris: []Step{},
			note:   "is not a directory: lockctl leaves it alone",
		},
		{
			name:   "a-directory-holding-more-is-not",
			procs:  procs(holderPid, alive),
			lock:   gone(build(func(c *scan.Claim) { c.Others = []string{"data.db"} })),
			want:   Live,
			debris: []Step{},
			note:   "holds data.db besides a record",
		},
		{
			name:  "another-format-is-not",
			procs: procs(holderPid, alive),
			lock: gone(build(func(c *scan.Claim) {
				c.Record.Raw, c.Record.Holder = []byte(rawB(b)), b
			})),
			want:   Live,
			debris: []Step{},
			note:   "is not a lockctl record",
		},
		{
			// lockctl run builds the record of the command it starts,
			// whose token is that process's, not the build's.
			name:   "a-run-build-of-another-token-is-debris",
			procs:  procs(holderPid, alive),
			lock:   gone(build(func(c *scan.Claim) { c.Token = "779.0123456789abcdef0123456789abcdef.1" })),
			want:   Live,
			debris: steps,
		},
		{
			name:  "a-token-line-that-is-no-token-is-not",
			procs: procs(holderPid, alive),
			lock: gone(build(func(c *scan.Claim) {
				c.Record.Raw, c.Record.Holder = []byte(scan.LockctlMagic+"\ntoken my-notes\nkeep me\n"), nil
			})),
			want:   Live,
			debris: []Step{},
			note:   "is not a lockctl record",
		},
		{
			name:   "a-file-beside-no-lock-is-no-abandoned-build",
			procs:  procs(holderPid, alive),
			lock:   orphan(scan.FormatUnrecognized, build(func(c *scan.Claim) { c.Record.File = name })),
			want:   Claimed,
			reason: "no lock, only 0 unpublished builds: 0 by acquirers still running, 0 abandoned, and 1 entry named like one that is not lockctl's",
			debris: []Step{},
		},
	})
}

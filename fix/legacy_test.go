//go:build linux

package fix_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// Tests of --legacy-older-than: the sweep of owner-less locks. Holders are
// this test binary re-run by testutil.StartHolder: it takes a flock on a
// file or directory, or just opens it, says so, and holds on until its
// stdin closes. Every one is waited for.

const (
	holderComm = "fix.test"
	legacyAge  = 3 * time.Hour
)

// TestHolderProcess is not a test: it is the holder process the tests here
// start.
func TestHolderProcess(t *testing.T) { testutil.HolderProcess(t) }

// inheritedFlock leaves path flock-held by a process that inherited the
// descriptor from a locker that has exited (the shell idiom "exec 9>>F;
// flock 9"). It returns the holder's pid.
func inheritedFlock(t *testing.T, path string) int {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := testutil.StartHolder(t, "hold-fd3", path, f)
	testutil.StartHolder(t, "flock-fd3-and-exit", path, f).Exited(t)
	waitLocked(t, path)
	return h.Pid
}

// waitLocked polls /proc/locks, up to 10s, until it shows a lock on path.
func waitLocked(t *testing.T, path string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(" %02x:%02x:%d ", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/proc/locks shows no lock on %s within 10s", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// age sets path's times legacyAge back.
func age(t *testing.T, path string) {
	t.Helper()
	when := time.Now().Add(-legacyAge)
	if err := os.Chtimes(path, when, when); err != nil {
		t.Fatal(err)
	}
}

// judgeEv is judge (helpers_test.go) as doctor judges: with kernel
// evidence, gathered once for the walk.
//
// As root, a judgement whose evidence came out partial is made again (up
// to 20 times): a process that exits while its fds are read makes a
// gathering incomplete (verdict's TestKernelEvidenceCompleteWhileProcessesExit),
// and the tests running alongside start and end processes all the time.
func judgeEv(t *testing.T, root, path string, want verdict.Verdict) verdict.Result {
	t.Helper()
	for range 20 {
		res := judgeEvOnce(t, root, path)
		if res.Verdict == verdict.Ownerless && res.Seen == verdict.SeenPartial && os.Geteuid() == 0 {
			continue
		}
		if res.Verdict != want {
			t.Fatalf("fixture: Judge(%s) = %s (%s), want %s", path, res.Verdict, res.Reason, want)
		}
		return res
	}
	t.Fatalf("fixture: as root, 20 judgements of %s in a row saw only some processes", path)
	return verdict.Result{}
}

func judgeEvOnce(t *testing.T, root, path string) verdict.Result {
	t.Helper()
	m := must(scan.NewMatcher(nil))
	r := must(scan.ResolveRoot(root, m))
	j := verdict.Judge{Host: localHost(), Probe: kernel.KernelProbe{}, Evidence: seenButHidden{&kernel.KernelEvidence{}}}
	var res *verdict.Result
	w := scan.Walker{
		Match: m,
		Found: func(l *scan.Lock) {
			if l.Path == path {
				r := j.Judge(l)
				res = &r
			}
		},
		Warn: func(err error) { t.Errorf("walk %s: %v", root, err) },
	}
	if err := w.Walk(r); err != nil {
		t.Fatal(err)
	}
	if res == nil {
		t.Fatalf("walking %s did not find %s", root, path)
	}
	return *res
}

// sweptLegacy runs a new legacy fixer (hook, when not nil, as its Hook) on
// res. When the fixer's own second judgement came out partial (see
// judgeEv), the lock is put back; it judges again and runs another fixer,
// up to 20 times.
func sweptLegacy(t *testing.T, root string, res verdict.Result, hook func(fix.Step, *scan.Lock)) fix.Outcome {
	t.Helper()
	for range 20 {
		f := legacyFixer(t)
		f.Hook = hook
		o := f.Fix(res)
		if o.Action == fix.Kept && strings.Contains(o.Reason, "judged again, it is ownerless") {
			res = judgeEv(t, root, res.Lock.Path, verdict.Ownerless)
			continue
		}
		return o
	}
	t.Fatalf("as root, 20 second judgements of %s in a row saw only some processes", res.Lock.Path)
	return fix.Outcome{}
}

func legacyFixer(t *testing.T) *fix.Fixer {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the legacy sweep acts only when every process's open files can be seen")
	}
	f := fix.New(judges.Sweep(localHost()))
	f.Judge.Evidence = seenButHidden{&kernel.KernelEvidence{Fresh: true}}
	f.LegacyOlderThan = time.Hour
	return f
}

// legacyLock makes one kind of owner-less lock at dir/name.
type legacyLock struct {
	name string
	make func(t *testing.T, path string)
}

var (
	emptyDirLock  = legacyLock{"emptydir.lock", func(t *testing.T, p string) { testutil.Mkdir(t, p) }}
	emptyFileLock = legacyLock{"empty.lock", func(t *testing.T, p string) { testutil.WriteFile(t, p, nil) }}
	zeroFileLock  = legacyLock{"zero.lock", func(t *testing.T, p string) { testutil.WriteFile(t, p, []byte("0")) }}
)

// TestLegacyFixAloneNeverSweeps: without --legacy-older-than, --fix never
// removes an owner-less lock, however old and however unheld.
func TestLegacyFixAloneNeverSweeps(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the fixture must be owner-less with every process seen")
	}
	reg := tempDir(t)
	locks := []legacyLock{emptyDirLock, emptyFileLock, zeroFileLock,
		{"bad.lock", func(t *testing.T, p string) { testutil.WriteFile(t, p, []byte("abc\n")) }}}
	for _, l := range locks {
		p := filepath.Join(reg, l.name)
		l.make(t, p)
		age(t, p)
	}
	before := testutil.Snapshot(t, reg)
	f := fix.New(judges.Sweep(localHost()))
	for _, l := range locks {
		p := filepath.Join(reg, l.name)
		v := verdict.Ownerless
		if l.name == emptyFileLock.name {
			v = verdict.Idle // nobody holds it or has it open
		}
		res := judgeEv(t, reg, p, v)
		o := f.Fix(res)
		wantOutcome(t, p, o, fix.Skipped, "this one is "+string(v))
	}
	testutil.SameTree(t, reg, before)
}

// TestLegacySweep: with --legacy-older-than 1h, an unheld owner-less lock
// file or empty lock directory unchanged for 3h is removed; a young one,
// and one that is more than an empty directory or an owner-less file, is
// not.
func TestLegacySweep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lock   legacyLock
		young  bool
		want   fix.Action
		reason string
	}{
		{name: "old-empty-dir", lock: emptyDirLock, want: fix.Removed, reason: "an empty lock directory, unchanged for longer than --legacy-older-than"},
		{name: "young-empty-dir", lock: emptyDirLock, young: true, want: fix.Skipped, reason: "within --legacy-older-than 1h0m0s"},
		// An empty file that nobody holds or has open is idle: it may be
		// a kernel-lock file a process is about to lock, and age never
		// removes it (issue 42).
		{name: "old-empty-file", lock: emptyFileLock, want: fix.Skipped, reason: "this one is idle"},
		{name: "young-empty-file", lock: emptyFileLock, young: true, want: fix.Skipped, reason: "this one is idle"},
		{name: "old-zero-file", lock: zeroFileLock, want: fix.Removed, reason: "owner-less and unchanged"},
		{name: "old-zero-newline-file", lock: legacyLock{"zero.lock", func(t *testing.T, p string) { testutil.WriteFile(t, p, []byte("0\n")) }}, want: fix.Removed},
		// Bytes no format lockctl reads claim are never nothing, however
		// old: another program's live lock (GnuPG's dotlock writes its pid
		// and host name) or its data (Cargo.lock).
		{name: "old-malformed-file", lock: legacyLock{"bad.lock", func(t *testing.T, p string) { testutil.WriteFile(t, p, []byte("hello\n")) }}, want: fix.Kept, reason: "its bytes are not a record lockctl reads"},
		// GnuPG's own dotlock ("%10d\n<node>\n") is read now
		// (scan/format_gnupg.go); one whose pid is not in ten columns is
		// nobody's record lockctl knows.
		{name: "old-dotlock-like-file", lock: legacyLock{"pubring.kbx.lock", func(t *testing.T, p string) { testutil.WriteFile(t, p, []byte("  4213\nhost\n")) }}, want: fix.Kept, reason: "its bytes are not a record lockctl reads"},
		{name: "old-cargo-lock", lock: legacyLock{"Cargo.lock", func(t *testing.T, p string) {
			testutil.WriteFile(t, p, []byte("# This file is automatically @generated by Cargo.\nversion = 3\n\n[[package]]\nname = \"a\"\n"))
		}}, want: fix.Kept, reason: "its bytes are not a record lockctl reads"},
		{name: "old-binary-file", lock: legacyLock{"bin.lock", func(t *testing.T, p string) { testutil.WriteFile(t, p, []byte("\x00\x01lock")) }}, want: fix.Kept, reason: "its bytes are not a record lockctl reads"},
		{name: "old-zero-kv-file", lock: legacyLock{"kv.lock", func(t *testing.T, p string) { testutil.WriteFile(t, p, []byte("pid=0\n")) }}, want: fix.Removed},
		{
			name: "old-dir-with-an-unknown-entry",
			lock: legacyLock{"dir.lock", func(t *testing.T, p string) {
				testutil.Mkdir(t, p)
				testutil.WriteFile(t, filepath.Join(p, "notes"), []byte("x"))
			}},
			want: fix.Kept, reason: "side files or other entries sit with it",
		},
		{
			name: "old-registry-a-with-a-malformed-holder",
			lock: legacyLock{"a.lock", func(t *testing.T, p string) {
				testutil.Mkdir(t, p)
				testutil.WriteFile(t, p+".holder", []byte("junk\n"))
			}},
			want: fix.Kept, reason: "removes only owner-less lock files and empty lock directories",
		},
		{
			name: "old-registry-b-with-only-dead-writer-evidence",
			lock: legacyLock{"b.lock", func(t *testing.T, p string) {
				testutil.Mkdir(t, p)
				g := testutil.Gone(t)
				testutil.WriteFile(t, filepath.Join(p, "writer."+testutil.TokenB(g, 1)+"."+strconv.Itoa(g)), nil)
			}},
			want: fix.Kept, reason: "side files or other entries sit with it",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := tempDir(t)
			p := filepath.Join(reg, tc.lock.name)
			tc.lock.make(t, p)
			if !tc.young {
				age(t, p)
				if exists(p + ".holder") {
					age(t, p+".holder")
				}
			}
			before := testutil.Snapshot(t, reg)
			v := verdict.Ownerless
			if tc.lock.name == emptyFileLock.name {
				v = verdict.Idle // nobody holds it or has it open
			}
			res := judgeEv(t, reg, p, v)
			o := sweptLegacy(t, reg, res, nil)
			wantOutcome(t, p, o, tc.want, tc.reason)
			if tc.want != fix.Removed {
				testutil.SameTree(t, reg, before)
				return
			}
			if exists(p) {
				t.Errorf("%s is still there after it was removed", p)
			}
			if got := names(t, reg); len(got) != 0 {
				t.Errorf("after the sweep %s holds %q, want nothing", reg, got)
			}
		})
	}
}

// TestLegacyHeldIsNotSwept: an old owner-less lock that a live process
// holds (flock, an inherited flock, or just open) reads live, names that
// process, and is left alone.
func TestLegacyHeldIsNotSwept(t *testing.T) {
	for _, tc := range []struct {
		name string
		lock legacyLock
		hold func(t *testing.T, p string) int
		how  string
	}{
		{"zero-file-flock", zeroFileLock, func(t *testing.T, p string) int { return testutil.StartHolder(t, "flock", p).Pid }, "flock held"},
		{"zero-file-open", zeroFileLock, func(t *testing.T, p string) int { return testutil.StartHolder(t, "open", p).Pid }, "held open"},
		{"empty-dir-flock", emptyDirLock, func(t *testing.T, p string) int { return testutil.StartHolder(t, "flock", p).Pid }, "flock held"},
		{"zero-file-inherited-flock", zeroFileLock, inheritedFlock, "flock held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := legacyFixer(t)
			reg := tempDir(t)
			p := filepath.Join(reg, tc.lock.name)
			tc.lock.make(t, p)
			pid := tc.hold(t, p)
			age(t, p)
			before := testutil.Snapshot(t, reg)
			res := judgeEv(t, reg, p, verdict.Live)
			if want := fmt.Sprintf("; %s by pid %d (%s)", tc.how, pid, holderComm); !strings.HasSuffix(res.Reason, want) {
				t.Errorf("Judge(%s).Reason = %q, want it to end %q", p, res.Reason, want)
			}
			wantOutcome(t, p, f.Fix(res), fix.Skipped, "this one is live")
			testutil.SameTree(t, reg, before)
		})
	}
}

// TestLegacyKeptWhereUnsure: an old, unheld owner-less lock is still kept
// on a network file system, and when the kernel's evidence was partial or
// not asked for.
func TestLegacyKeptWhereUnsure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*verdict.Result)
		reason string
	}{
		{"network-file-system", func(r *verdict.Result) { r.Lock.FS = fsx.FS{Name: "nfs", Remote: true} }, "on a network file system (nfs)"},
		{"file-system-unknown", func(r *verdict.Result) { r.Lock.FS = fsx.FS{Name: "unknown", Remote: true} }, "on a network file system (unknown)"},
		{"partial-evidence", func(r *verdict.Result) { r.Seen = verdict.SeenPartial }, "not every process's open files could be seen"},
		{"no-evidence", func(r *verdict.Result) { r.Seen = verdict.SeenNothing }, "the kernel was not asked who holds it"},
	} {
		for _, l := range []legacyLock{emptyDirLock, zeroFileLock} {
			t.Run(tc.name+"/"+l.name, func(t *testing.T) {
				f := legacyFixer(t)
				reg := tempDir(t)
				p := filepath.Join(reg, l.name)
				l.make(t, p)
				age(t, p)
				before := testutil.Snapshot(t, reg)
				res := judgeEv(t, reg, p, verdict.Ownerless)
				tc.change(&res)
				wantOutcome(t, p, f.Fix(res), fix.Kept, tc.reason)
				testutil.SameTree(t, reg, before)
			})
		}
	}
	// Judged without kernel evidence at all (a Judge with no Evidence).
	t.Run("judged-without-evidence", func(t *testing.T) {
		f := legacyFixer(t)
		reg := tempDir(t)
		p := filepath.Join(reg, "x.lock")
		testutil.Mkdir(t, p)
		age(t, p)
		before := testutil.Snapshot(t, reg)
		res := judge(t, reg, p, verdict.Ownerless)
		wantOutcome(t, p, f.Fix(res), fix.Kept, "the kernel was not asked")
		testutil.SameTree(t, reg, before)
	})
}

// claimOf returns the one claim beside lock.
func claimOf(t *testing.T, lock string) string {
	t.Helper()
	cs := claims(t, lock)
	if len(cs) != 1 {
		t.Fatalf("claims beside %s: %q, want exactly one", lock, cs)
	}
	return cs[0]
}

// TestLegacyTakenAfterTheClaim: a process takes the lock after it was
// claimed, before it is judged again: the second judgement, asking the
// kernel afresh, sees it, and the lock goes back to its name as it was.
func TestLegacyTakenAfterTheClaim(t *testing.T) {
	for _, tc := range []struct {
		name string
		lock legacyLock
		role string
	}{
		{"zero-file-flock", zeroFileLock, "flock"},
		{"empty-dir-flock", emptyDirLock, "flock"},
		{"zero-file-open", zeroFileLock, "open"},
		{"empty-dir-open", emptyDirLock, "open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := legacyFixer(t)
			reg := tempDir(t)
			p := filepath.Join(reg, tc.lock.name)
			tc.lock.make(t, p)
			age(t, p)
			before := testutil.Snapshot(t, reg)
			res := judgeEv(t, reg, p, verdict.Ownerless)
			var pid int
			f.Hook = at(t, fix.BeforeJudge, func(*scan.Lock) {
				if exists(p) {
					t.Errorf("at BeforeJudge %s is still at its name: it was not claimed", p)
				}
				pid = testutil.StartHolder(t, tc.role, claimOf(t, p)).Pid
			})
			o := f.Fix(res)
			wantOutcome(t, p, o, fix.Kept, "judged again, it is live")
			if !strings.Contains(o.Reason, "by pid "+strconv.Itoa(pid)) || !strings.Contains(o.Reason, "the record was put back") {
				t.Errorf("Fix(%s).Reason = %q, want it to name pid %d and say the lock was put back", p, o.Reason, pid)
			}
			testutil.SameTree(t, reg, before)
		})
	}
}

// earlierSweep returns a legacy fixer that has already swept the unheld
// owner-less lock first, so that its kernel evidence is gathered. A sweep
// whose evidence came out partial (see judgeEv) is tried again with a new
// fixer.
func earlierSweep(t *testing.T, reg, first string) *fix.Fixer {
	t.Helper()
	for range 20 {
		f := legacyFixer(t)
		o := f.Fix(judgeEv(t, reg, first, verdict.Ownerless))
		switch {
		case o.Action == fix.Removed:
			return f
		case o.Action != fix.Kept || !strings.Contains(o.Reason, "judged again, it is ownerless"):
			t.Fatalf("Fix(%s) = %s (%s), want removed", first, o.Action, o.Reason)
		}
	}
	t.Fatalf("as root, 20 second judgements of %s in a row saw only some processes", first)
	return nil
}

// secondAfterAnEarlierSweep lays out two old owner-less locks in a new
// registry, an empty directory a.lock and a "0" file b.lock, judges
// b.lock, and sweeps a.lock with the fixer it returns (earlierSweep), so
// that its kernel evidence is gathered before b.lock is swept.
func secondAfterAnEarlierSweep(t *testing.T) (reg, second string, judged verdict.Result, f *fix.Fixer) {
	t.Helper()
	reg = tempDir(t)
	first, second := filepath.Join(reg, "a.lock"), filepath.Join(reg, "b.lock")
	testutil.Mkdir(t, first)
	testutil.WriteFile(t, second, []byte("0\n"))
	age(t, first)
	age(t, second)
	judged = judgeEv(t, reg, second, verdict.Ownerless)
	return reg, second, judged, earlierSweep(t, reg, first)
}

// TestLegacyTakenAfterAnEarlierSweep: the fixer's kernel evidence was
// already gathered (for an earlier lock of the same run) when a process
// flocks the next lock: /proc/locks is read afresh for every second
// judgement, so it is seen.
func TestLegacyTakenAfterAnEarlierSweep(t *testing.T) {
	reg, second, r2, f := secondAfterAnEarlierSweep(t)
	before := testutil.Snapshot(t, reg)
	f.Hook = at(t, fix.BeforeJudge, func(*scan.Lock) { testutil.StartHolder(t, "flock", claimOf(t, second)) })
	wantOutcome(t, second, f.Fix(r2), fix.Kept, "judged again, it is live")
	testutil.SameTree(t, reg, before)
}

// TestLegacyInheritedLockAfterAnEarlierSweep: as above, but the lock is
// taken the shell's way ("exec 9>>F; flock 9": flock(1) exits at once and
// the shell holds the lock) before the claim. /proc/locks, read afresh,
// shows the lock under a dead pid; the holder opened the file after the
// open-file index was built. The lock is held; it must not be removed.
func TestLegacyInheritedLockAfterAnEarlierSweep(t *testing.T) {
	reg, second, r2, f := secondAfterAnEarlierSweep(t)
	before := testutil.Snapshot(t, reg)
	f.Hook = at(t, fix.BeforeClaim, func(*scan.Lock) { inheritedFlock(t, second) })
	wantOutcome(t, second, f.Fix(r2), fix.Kept, "judged again, it is live")
	testutil.SameTree(t, reg, before)
}

// TestLegacyDirFilledAfterTheClaim: something is put into the claimed
// directory before it is verified: it is no longer empty, goes back with
// what it holds, and is never judged again or removed.
func TestLegacyDirFilledAfterTheClaim(t *testing.T) {
	f := legacyFixer(t)
	reg := tempDir(t)
	p := filepath.Join(reg, "x.lock")
	testutil.Mkdir(t, p)
	age(t, p)
	ino := inode(t, p)
	res := judgeEv(t, reg, p, verdict.Ownerless)
	judged := false
	verify := at(t, fix.BeforeVerify, func(*scan.Lock) { testutil.WriteFile(t, filepath.Join(claimOf(t, p), "holder.new"), []byte("mine\n")) })
	f.Hook = func(s fix.Step, l *scan.Lock) {
		verify(s, l)
		if s == fix.BeforeJudge || s == fix.BeforeRemove {
			judged = true
		}
	}
	o := f.Fix(res)
	wantOutcome(t, p, o, fix.Kept, "the directory is no longer empty; the record was put back")
	if judged {
		t.Errorf("Fix(%s) went on past verification to judge or remove a directory that is not empty", p)
	}
	if got := inode(t, p); got != ino {
		t.Errorf("%s is inode %d, want %d (the directory judged, put back)", p, got, ino)
	}
	wantFile(t, filepath.Join(p, "holder.new"), []byte("mine\n"), 0)
	noDebris(t, reg)
}

// TestLegacyDirTouchedBeforeTheClaim: the empty lock directory's mtime
// moved between the judgement and the claim, as npm's proper-lockfile
// holder moves it every few seconds to prove it lives: the sweep puts the
// directory back and removes nothing.
func TestLegacyDirTouchedBeforeTheClaim(t *testing.T) {
	f := legacyFixer(t)
	reg := tempDir(t)
	p := filepath.Join(reg, "x.lock")
	testutil.Mkdir(t, p)
	age(t, p)
	ino := inode(t, p)
	res := judgeEv(t, reg, p, verdict.Ownerless)
	f.Hook = at(t, fix.BeforeClaim, func(*scan.Lock) {
		now := time.Now()
		if err := os.Chtimes(p, now, now); err != nil {
			t.Fatal(err)
		}
	})
	o := f.Fix(res)
	wantOutcome(t, p, o, fix.Kept, "the directory's modification time moved since it was judged: a holder refreshing it is alive; the record was put back")
	if got := inode(t, p); got != ino {
		t.Errorf("%s is inode %d, want %d (the directory judged, put back)", p, got, ino)
	}
	noDebris(t, reg)
}

// TestLegacyReplacedBeforeTheClaim: the lock was replaced by a new one
// between the judgement and the claim: the claim takes the new one, sees
// it is not the inode judged, and puts it back untouched.
func TestLegacyReplacedBeforeTheClaim(t *testing.T) {
	t.Run("dir", func(t *testing.T) {
		f := legacyFixer(t)
		reg := tempDir(t)
		p := filepath.Join(reg, "x.lock")
		testutil.Mkdir(t, p)
		age(t, p)
		res := judgeEv(t, reg, p, verdict.Ownerless)
		var ino uint64
		f.Hook = at(t, fix.BeforeClaim, func(*scan.Lock) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			// Something unrelated keeps the old inode number from coming
			// straight back.
			testutil.Mkdir(t, filepath.Join(reg, "spacer"))
			testutil.Mkdir(t, p)
			ino = inode(t, p)
		})
		wantOutcome(t, p, f.Fix(res), fix.Kept, "the directory changed since it was judged; the record was put back")
		if got := inode(t, p); got != ino {
			t.Errorf("%s is inode %d, want the new directory's %d", p, got, ino)
		}
		noDebris(t, reg)
	})
	t.Run("file", func(t *testing.T) {
		f := legacyFixer(t)
		reg := tempDir(t)
		p := filepath.Join(reg, "x.lock")
		testutil.WriteFile(t, p, []byte("0\n"))
		age(t, p)
		res := judgeEv(t, reg, p, verdict.Ownerless)
		var ino uint64
		f.Hook = at(t, fix.BeforeClaim, func(*scan.Lock) { ino = replaceFile(t, p, []byte("0\n")) })
		o := f.Fix(res)
		wantOutcome(t, p, o, fix.Kept, "the record was replaced since it was judged")
		wantFile(t, p, []byte("0\n"), ino)
		noDebris(t, reg)
	})
	t.Run("dir-taken-by-a-flock", func(t *testing.T) {
		f := legacyFixer(t)
		reg := tempDir(t)
		p := filepath.Join(reg, "x.lock")
		testutil.Mkdir(t, p)
		age(t, p)
		before := testutil.Snapshot(t, reg)
		res := judgeEv(t, reg, p, verdict.Ownerless)
		f.Hook = at(t, fix.BeforeClaim, func(*scan.Lock) { testutil.StartHolder(t, "flock", p) })
		wantOutcome(t, p, f.Fix(res), fix.Kept, "judged again, it is live")
		testutil.SameTree(t, reg, before)
	})
}

// TestLegacyChangedBeforeOpen: a lock removed, or written to, since it was
// judged is skipped.
func TestLegacyChangedBeforeOpen(t *testing.T) {
	t.Run("removed", func(t *testing.T) {
		f := legacyFixer(t)
		reg := tempDir(t)
		p := filepath.Join(reg, "x.lock")
		testutil.Mkdir(t, p)
		age(t, p)
		res := judgeEv(t, reg, p, verdict.Ownerless)
		f.Hook = at(t, fix.BeforeOpen, func(*scan.Lock) { must(0, os.Remove(p)) })
		o := f.Fix(res)
		wantOutcome(t, p, o, fix.Skipped, "already removed")
		if !o.Gone {
			t.Errorf("Fix(%s).Gone = false, want true", p)
		}
	})
	t.Run("written", func(t *testing.T) {
		f := legacyFixer(t)
		reg := tempDir(t)
		p := filepath.Join(reg, "x.lock")
		testutil.WriteFile(t, p, []byte("0\n"))
		age(t, p)
		res := judgeEv(t, reg, p, verdict.Ownerless)
		var before map[string]testutil.Entry
		f.Hook = at(t, fix.BeforeOpen, func(*scan.Lock) {
			now := time.Now()
			must(0, os.Chtimes(p, now, now))
			before = testutil.Snapshot(t, reg)
		})
		wantOutcome(t, p, f.Fix(res), fix.Skipped, "changed since it was judged")
		testutil.SameTree(t, reg, before)
	})
}

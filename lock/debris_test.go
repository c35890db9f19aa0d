//go:build linux

package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// releaseFor is ReleaseFor with a panic turned into an error.
func releaseFor(path string, pid int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return ReleaseFor(path, pid, kern)
}

// TestReleaseForBesideClaimedRecord: lockctl release on a lock whose record
// is out in a release claim (a release under way, or one killed after its
// claim) must answer, not crash, and touch nothing it does not own.
func TestReleaseForBesideClaimedRecord(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	s := testutil.Sleeper(t)
	pid := s.Process.Pid
	killedAt(t, p, ReleaseClaimed, pid) // the holder's release, killed after its claim
	stranger := testutil.Sleeper(t)
	before := testutil.Snapshot(t, dir)
	if err := releaseFor(p, stranger.Process.Pid); err == nil || strings.HasPrefix(err.Error(), "panic") {
		t.Errorf("ReleaseFor by a stranger of an empty lock whose record is in a release claim = %v, want a refusal", err)
	}
	testutil.Untouched(t, dir, before)
	if err := releaseFor(p, pid); err != nil && strings.HasPrefix(err.Error(), "panic") {
		t.Errorf("ReleaseFor by the holder of an empty lock whose record is in a release claim = %v, want an answer", err)
	}
}

// sidePosition is the index, in directory order, of the first side file of
// x.lock whose name starts with prefix, among all of them.
func sidePosition(t *testing.T, dir, prefix string) int {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	all, err := d.Readdirnames(-1) // unsorted: the order scan sees
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, n := range all {
		if n == "x.lock" || n == "c.lock" {
			continue
		}
		if strings.HasPrefix(n, prefix) {
			return i
		}
		i++
	}
	t.Fatalf("no %s* in %s", prefix, dir)
	return 0
}

// abandonedBuilds makes n record directories <lock>.new.<token> beside the
// lock at p, each as an acquirer SIGKILLed while it waited leaves it, for
// processes that are gone.
func abandonedBuilds(t *testing.T, p string, n int) {
	t.Helper()
	gone := testutil.Gone(t)
	for i := range n {
		i += int(time.Now().UnixNano() % 1e9) // distinct names on every call
		_, rec := holderFor(t, os.Getpid(), func(h *scan.Holder) {
			setPid(h, gone)
			h.Token = fmt.Sprintf("%d.%032x.1", gone, i)
		})
		d := p + ".new." + strconv.Itoa(gone) + fmt.Sprintf(".%032x.1.%d", i, gone) // made by gone
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		testutil.WriteFile(t, filepath.Join(d, "holder"), rec)
	}
}

// TestCrashLeftoversOfKilledWaitersAreSwept: the record directories that
// acquirers SIGKILLed while waiting leave behind are judged abandoned (their
// makers are gone) and must be swept, however many there are and whether or
// not the lock is there.
func TestCrashLeftoversOfKilledWaitersAreSwept(t *testing.T) {
	tests := []struct {
		name    string
		crafted int  // record directories written directly, beyond two real ones
		held    bool // the lock is held meanwhile
	}{
		{"two, lock free", 0, false},
		{"two, lock held", 0, true},
		{"more than scan reads, lock free", 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.lock")
			killedAt(t, p, Built, 0)
			killedAt(t, p, Built, 0)
			if tt.crafted > 0 {
				abandonedBuilds(t, p, tt.crafted)
			}
			if tt.held {
				l := acquireWithin(t, p, 5*time.Second)
				defer l.Release()
			}
			judgedAs(t, dir, "", false)
			sweep(t, dir)
			want := 0
			if tt.held {
				want = 1
			}
			if got := testutil.Names(t, dir); len(got) != want {
				t.Errorf("a sweep leaves the record directories of acquirers killed while waiting: %s (judged:%s)", brief(got), describe(judgeDir(t, dir)))
			}
		})
	}
}

// TestAcquireBreaksAbandonedReleaseBesideManyBuilds: a lock whose holder was
// killed in the middle of its release is broken by the next Acquire, even
// when many acquirers killed while waiting have left their record
// directories beside it. (The chaos test found this: with more side files
// than scan reads, the release claim goes unread and the lock reads as
// owner-less, which nothing ever breaks.)
func TestAcquireBreaksAbandonedReleaseBesideManyBuilds(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	killedAt(t, p, ReleaseClaimed, 0)
	// Side files are read in directory order: add builds until the
	// release claim comes after the first 64 of them.
	n := 0
	for n < 2000 && sidePosition(t, dir, "x.lock.rel.") < 70 {
		abandonedBuilds(t, p, 50)
		n += 50
	}
	r := judge(t, p)
	if r.Verdict == verdict.Ownerless {
		t.Errorf("a lock whose release was abandoned, beside %d abandoned builds, is judged owner-less (%s)", n, r.Reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l, err := Acquire(ctx, p, Options{Kernel: kern})
	if err != nil {
		var o *OwnerlessError
		if errors.As(err, &o) {
			t.Errorf("Acquire never breaks it: %v", err)
			return
		}
		t.Fatalf("Acquire = %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestBuildNameCarriesNamespace: the build Acquire makes beside the lock
// ends with its maker's pid namespace (scan.NSSuffix), so that a build left
// by a killed acquirer before its record was written can be judged from
// another namespace.
func TestBuildNameCarriesNamespace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	suffix := scan.NSSuffix(localHost().PidNS)
	if suffix == "" {
		t.Skip("no pid namespace inode here")
	}
	var names []string
	l, err := Acquire(context.Background(), p, Options{Kernel: kern, Hook: func(pt Point) {
		if pt == Built {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				names = append(names, e.Name())
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	want := fmt.Sprintf(".%d%s", os.Getpid(), suffix)
	if len(names) != 1 || !strings.HasPrefix(names[0], "x.lock.new.") || !strings.HasSuffix(names[0], want) {
		t.Errorf("the build beside the lock: %q, want x.lock.new.<token>%s", names, want)
	}
}

// TestSweepLeavesWhatIsNotABuild: a side file named like an unpublished
// build whose maker is gone (<lock>.new.<token>.<gone pid>) is swept only
// when it is lockctl's build: a directory holding nothing but a lockctl
// record. A directory that also holds other files, a
// regular file, or a record that is not lockctl's is left exactly as it was, by
// every sweep and by Acquire, with the lock there or not (issue 28, case 6).
func TestSweepLeavesWhatIsNotABuild(t *testing.T) {
	for _, held := range []bool{true, false} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.lock")
			gone := testutil.Gone(t)
			name := func(i int) string { return fmt.Sprintf("%s.new.%d.%032x.1.%d", p, gone, i, gone) }
			record := func(i int) []byte {
				_, rec := holderFor(t, os.Getpid(), func(h *scan.Holder) {
					setPid(h, gone)
					h.Token = fmt.Sprintf("%d.%032x.1", gone, i)
				})
				return rec
			}
			// A build of token 1 that also holds someone's file.
			testutil.Mkdir(t, name(1))
			testutil.WriteFile(t, filepath.Join(name(1), "holder"), record(1))
			testutil.WriteFile(t, filepath.Join(name(1), "data"), []byte("keep me\n"))
			// A regular file of a build's name.
			testutil.WriteFile(t, name(2), record(2))
			// A directory whose record begins as lockctl's but has no
			// token line: someone's notes.
			testutil.Mkdir(t, name(3))
			testutil.WriteFile(t, filepath.Join(name(3), "holder"), []byte(scan.LockctlMagic+"\nnotes: keep\n"))
			// A directory holding a record of another format.
			testutil.Mkdir(t, name(5))
			testutil.WriteFile(t, filepath.Join(name(5), "holder"), []byte("12345\n"))
			if held {
				l := acquireWithin(t, p, 5*time.Second)
				defer l.Release()
			}
			before := testutil.Snapshot(t, dir)
			for range 2 {
				sweep(t, dir)
				testutil.Untouched(t, dir, before)
			}
			for _, r := range judgeDir(t, dir) {
				for _, s := range r.Debris {
					t.Errorf("%s: debris step %s %s for what is not a build", r.Lock.Name, s.Op, s.Path)
				}
			}
		})
	}
}

// TestDebrisExaminesBeforeItTouches: fix.Debris acts on steps judged
// earlier (or, past scan's read limit, by name alone); what stands there
// when it acts must still be lockctl's build, or it is not renamed, nor
// removed: a regular file, a directory that also holds another file, a
// record that is not lockctl's.
func TestDebrisExaminesBeforeItTouches(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	gone := testutil.Gone(t)
	name := func(i int) string { return fmt.Sprintf("%s.new.%d.%032x.1.%d", p, gone, i, gone) }
	_, rec := holderFor(t, os.Getpid(), func(h *scan.Holder) {
		setPid(h, gone)
		h.Token = fmt.Sprintf("%d.%032x.1", gone, 1)
	})
	testutil.Mkdir(t, name(1))
	testutil.WriteFile(t, filepath.Join(name(1), "holder"), rec)
	testutil.WriteFile(t, filepath.Join(name(1), "data"), []byte("keep me\n"))
	testutil.WriteFile(t, name(2), rec)
	testutil.Mkdir(t, name(3))
	testutil.WriteFile(t, filepath.Join(name(3), "holder"), []byte(scan.LockctlMagic+"\nnotes: keep\n"))
	before := testutil.Snapshot(t, dir)
	res := verdict.Result{Lock: &scan.Lock{Path: p, Dir: dir, Name: "x.lock", Kind: scan.KindMissing}}
	for i := 1; i <= 3; i++ {
		res.Debris = append(res.Debris, verdict.Step{Op: verdict.OpRemove, Path: filepath.Join(name(i), "holder")}, verdict.Step{Op: verdict.OpRmdir, Path: name(i)})
	}
	if n := fix.New(judges.Sweep(localHost())).Debris(res); n != 0 {
		t.Errorf("Debris removed %d, want 0: none of them is a build", n)
	}
	testutil.Untouched(t, dir, before)
}

//go:build linux

package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// The environment of a re-run of this test binary as a helper process.
const (
	roleEnv   = "LOCKCTL_LOCK_TEST_ROLE"   // "pause" or "chaos"
	pathEnv   = "LOCKCTL_LOCK_TEST_PATH"   // the lock
	pointEnv  = "LOCKCTL_LOCK_TEST_POINT"  // pause: the Point to stop at
	holderEnv = "LOCKCTL_LOCK_TEST_HOLDER" // pause: Options.Pid
	logEnv    = "LOCKCTL_LOCK_TEST_LOG"    // chaos: the enter/exit log
	stopEnv   = "LOCKCTL_LOCK_TEST_STOP"   // chaos: a file whose existence says stop
)

// TestLockHelperProcess is not a test: it is the body of the helper
// processes the crash and chaos tests start by re-running this binary.
func TestLockHelperProcess(t *testing.T) {
	switch os.Getenv(roleEnv) {
	case "":
		return
	case "pause":
		pauseHelper()
	case "chaos":
		chaosWorker()
	default:
		fmt.Fprintf(os.Stderr, "unknown role %q\n", os.Getenv(roleEnv))
		os.Exit(2)
	}
	os.Exit(0)
}

// helper returns a re-run of this test binary in role, with env added.
func helper(role string, env ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$", "-test.count=1", "-test.timeout=0")
	c.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	return c
}

// pauseHelper acquires the lock (for LOCKCTL_LOCK_TEST_HOLDER, or itself)
// and releases it, stopping for good at LOCKCTL_LOCK_TEST_POINT after saying
// so on stdout.
func pauseHelper() {
	point := Point(os.Getenv(pointEnv))
	pid, _ := strconv.Atoi(os.Getenv(holderEnv))
	hook := func(p Point) {
		if p == point {
			fmt.Printf("paused at %s\n", p)
			for {
				time.Sleep(time.Hour)
			}
		}
	}
	l, err := Acquire(context.Background(), os.Getenv(pathEnv), Options{Kernel: kern, Pid: pid, Hook: hook})
	if err != nil {
		fmt.Printf("acquire: %v\n", err)
		os.Exit(1)
	}
	if err := l.Release(); err != nil {
		fmt.Printf("release: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("done")
}

// killedAt runs a helper that takes the lock p on behalf of holder (0: the
// helper itself) and releases it, SIGKILLs it at point, and reaps it.
func killedAt(t *testing.T, p string, point Point, holder int) {
	t.Helper()
	c := helper("pause", pathEnv+"="+p, pointEnv+"="+string(point), holderEnv+"="+strconv.Itoa(holder))
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endProcess(c) })
	readLines(out).await(t, "paused at "+string(point), 30*time.Second)
	killAndReap(t, c)
}

// bystander takes another lock in the same registry for a live process: no
// crash or recovery may touch it. The returned check says whether it is
// exactly as it was.
func bystander(t *testing.T, dir string) (check func()) {
	t.Helper()
	s := testutil.Sleeper(t)
	m := filepath.Join(dir, "m.lock")
	if _, err := Acquire(context.Background(), m, Options{Kernel: kern, Pid: s.Process.Pid, Command: "bystander"}); err != nil {
		t.Fatal(err)
	}
	before := testutil.Snapshot(t, m)
	return func() {
		t.Helper()
		testutil.Untouched(t, m, before)
		if r := judge(t, m); r.Verdict != verdict.Live {
			t.Errorf("the bystander lock is judged %s (%s), want live", r.Verdict, r.Reason)
		}
	}
}

// judgedAs checks that every lock and side file in dir is judged, that
// nothing is owner-less or unknown, and that the lock x.lock is judged want
// (with a remedy when wantRemedy; any verdict when want is "").
func judgedAs(t *testing.T, dir string, want verdict.Verdict, wantRemedy bool) verdict.Result {
	t.Helper()
	rs := judgeDir(t, dir)
	covered := map[string]bool{}
	var x *verdict.Result
	for i, r := range rs {
		switch r.Verdict {
		case verdict.Ownerless, verdict.Unknown, "":
			t.Errorf("%s is judged %q (%s): a crash must leave nothing that cannot be judged", r.Lock.Name, r.Verdict, r.Reason)
		}
		covered[r.Lock.Name] = true
		if r.Lock.Name == "x.lock" {
			x = &rs[i]
		}
		for _, c := range r.Lock.Claims {
			covered[strings.Split(c.Record.File, "/")[0]] = true
		}
	}
	for _, n := range testutil.Names(t, dir) {
		if !covered[n] {
			t.Errorf("%s is in the registry but no verdict covers it:%s", n, describe(rs))
		}
	}
	if x == nil {
		t.Fatalf("no verdict on x.lock:%s", describe(rs))
	}
	// Debris (abandoned builds) is a remedy too: doctor --fix removes it.
	if want != "" && (x.Verdict != want || wantRemedy != (len(x.Remove)+len(x.Debris) > 0)) {
		t.Errorf("x.lock is judged %s (%s) with remedy %v, want %s with a remedy: %v", x.Verdict, x.Reason, x.Remove, want, wantRemedy)
	}
	return *x
}

// TestCrashLockSelfHeld SIGKILLs a process that takes and releases a lock
// for itself at every step of both protocols. Whatever it leaves is judged,
// the next Acquire goes straight through, and a sweep leaves no debris.
func TestCrashLockSelfHeld(t *testing.T) {
	tests := []struct {
		point      Point
		want       verdict.Verdict
		wantRemedy bool
	}{
		{Built, verdict.Claimed, true},          // <lock>.new.<token>, its maker gone
		{Published, verdict.Gone, true},         // a complete lock, its holder gone
		{ReleaseClaimed, verdict.Claimed, true}, // an abandoned release
		{ReleaseRemoved, verdict.Claimed, true}, // an abandoned release, the lock gone
	}
	for _, tt := range tests {
		t.Run(string(tt.point), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.lock")
			intact := bystander(t, dir)
			killedAt(t, p, tt.point, 0)
			judgedAs(t, dir, tt.want, tt.wantRemedy)
			intact()
			l := acquireWithin(t, p, 5*time.Second)
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			sweep(t, dir)
			testutil.WantNames(t, dir, "m.lock")
			intact()
		})
	}
}

// TestCrashLockForLiveHolder SIGKILLs a process that takes and releases a
// lock on behalf of another, live, process (what lockctl acquire and
// release --holder-pid do) at every step. The holder's lock must stay held
// or be fully released, its record never lost, and what is left must be
// cleared while the holder runs, by the holder releasing again or by a sweep.
func TestCrashLockForLiveHolder(t *testing.T) {
	for _, point := range []Point{Built, Published, ReleaseClaimed, ReleaseRemoved} {
		t.Run(string(point), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.lock")
			intact := bystander(t, dir)
			s := testutil.Sleeper(t)
			pid := s.Process.Pid
			start, err := startOf(pid)
			if err != nil {
				t.Fatal(err)
			}
			killedAt(t, p, point, pid)
			intact()
			judgedAs(t, dir, "", false)

			// Held, or fully released: never half of each.
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			l, err := Acquire(ctx, p, Options{Kernel: kern})
			cancel()
			held := err != nil
			switch point {
			case Built, ReleaseRemoved:
				// The lock was never published, or already removed.
				if held {
					t.Fatalf("after a kill at %s the lock is not free: %v", point, err)
				}
				if err := l.Release(); err != nil {
					t.Fatal(err)
				}
			case Published:
				var e *HeldError
				if !errors.As(err, &e) || e.Holder.Pid != int64(pid) {
					t.Fatalf("after a kill at %s, Acquire = %v, want *HeldError naming the holder %d", point, err, pid)
				}
			case ReleaseClaimed:
				// The record is out of the lock but not yet verified: the
				// lock is still the holder's, and its record is kept.
				if !held {
					l.Release()
					t.Fatalf("after a kill at %s another process took the lock of a live holder", point)
				}
				if !holderRecordKept(t, dir, pid, start) {
					t.Fatalf("after a kill at %s the live holder's record is nowhere: %q", point, testutil.Names(t, dir))
				}
			}

			// The holder releases (again), and a sweep clears the rest,
			// while the holder still runs.
			relErr := releaseFor(p, pid)
			sweep(t, dir)
			if point == ReleaseClaimed && relErr != nil {
				relErr = releaseFor(p, pid) // a sweep may have put the record back
			}
			if got := testutil.Names(t, dir); len(got) != 1 {
				t.Errorf("after a kill at %s, with the holder still running, its release (%v) and a sweep leave %q (verdicts:%s)",
					point, relErr, got, describe(judgeDir(t, dir)))
			} else if point == Published && relErr != nil {
				t.Errorf("the holder cannot release its lock after its acquirer was killed at %s: %v", point, relErr)
			}

			// Once the holder is gone, everything goes.
			killAndReap(t, s)
			sweep(t, dir)
			testutil.WantNames(t, dir, "m.lock")
			intact()
			l = acquireWithin(t, p, 5*time.Second)
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// holderRecordKept reports whether a record naming pid with start is
// anywhere in the registry: in the lock, or in a claim beside it.
func holderRecordKept(t *testing.T, dir string, pid int, start uint64) bool {
	t.Helper()
	for _, r := range judgeDir(t, dir) {
		recs := r.Lock.Holders
		for _, c := range r.Lock.Claims {
			recs = append(recs, c.Record)
		}
		for _, rec := range recs {
			if h := rec.Holder; h != nil && h.Pid == int64(pid) && h.Start == start && rec.Err == nil {
				if _, err := scan.ParseLockctl(rec.Raw); err == nil {
					return true
				}
			}
		}
	}
	return false
}

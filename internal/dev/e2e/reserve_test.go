//go:build linux

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"golang.org/x/sys/unix"
)

// TestReserveOutlivesShell is issue 20's first "done when": a reservation
// made from a shell that exits at once keeps the lock held for its grace;
// a run meanwhile times out naming the reservation; the worker's adopt
// makes it the holder, and once the worker exits the lock is gone.
func TestReserveOutlivesShell(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	res := r.lockctl(nil, "reserve", "--grace", "30s", l)
	if res.code != 0 {
		t.Fatalf("lockctl reserve: exit %d\n%s", res.code, res.stderr)
	}
	token := strings.TrimSpace(res.stdout)
	// The reserver (lockctl's parent here is this test; from a shell, the
	// shell) does not hold it: the record, not a process, does.
	run := r.lockctl(nil, "run", "--timeout", "1s", l, "--", "true")
	if run.code != cli.ExitTimeout || !strings.Contains(run.stderr, "reserved for a worker until") {
		t.Fatalf("lockctl run on a reservation: exit %d, want %d naming the reservation\n%s", run.code, cli.ExitTimeout, run.stderr)
	}
	// The worker: a shell that adopts the lock, then works.
	aux := t.TempDir()
	ready := filepath.Join(aux, "ready")
	w := r.start(nil, "/bin/sh", "-c", fmt.Sprintf("%s adopt --token %s %s && echo ok > %s && exec sleep 3600", lcBinary(t), token, l, ready))
	testutil.WaitFor(t, 10*time.Second, "the worker to adopt", func() bool { return lcReadOr(ready) == "ok\n" })
	got := r.judgeOne(l)
	if got.Verdict != "live" || got.Holder == nil || got.Holder.Pid != int64(w.pid) {
		t.Fatalf("after adopt: %s (%s), want live, held by the worker %d", got.Verdict, got.Reason, w.pid)
	}
	w.kill()
	r.waitGone(w.pid)
	if got := r.judgeOne(l); got.Verdict != "gone" {
		t.Fatalf("after the worker exited: %s (%s), want gone", got.Verdict, got.Reason)
	}
	r.mustLockctl(0, "run", "--timeout", "5s", l, "--", "true")
	testutil.WantNames(t, dir)
}

// TestReserveFreesItselfAfterGrace: a reservation no worker adopts ends
// with its grace, not before, and the next acquire breaks it.
func TestReserveFreesItselfAfterGrace(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	begin := time.Now()
	r.mustLockctl(0, "reserve", "--grace", "2s", l)
	testutil.WaitFor(t, 30*time.Second, "the reservation to end", func() bool { return r.judgeOne(l).Verdict == "gone" })
	if took := time.Since(begin); took < 2*time.Second {
		t.Fatalf("the reservation read gone after %s, before its 2s grace", took)
	}
	r.mustLockctl(0, "run", "--timeout", "5s", l, "--", "true")
	testutil.WantNames(t, dir)
}

// TestReserveLastSlot: two dispatchers reserving the last free slot of a
// counting lock at the same moment (one of two slots is held by a worker):
// exactly one gets it, every time.
func TestReserveLastSlot(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	busy := r.sleeper()
	r.mustLockctl(0, "acquire", "--slots", "2", "--holder-pid", strconv.Itoa(busy.pid), l)
	for round := range 15 {
		var wg sync.WaitGroup
		res := make([]lcResult, 2)
		for i := range res {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i] = r.lockctl(nil, "reserve", "--slots", "2", "--grace", "1m", "--timeout", "300ms", "--quiet", l)
			}()
		}
		wg.Wait()
		won := 0
		for _, x := range res {
			switch x.code {
			case 0:
				won++
			case cli.ExitTimeout:
			default:
				t.Fatalf("round %d: reserve exited %d\n%s", round, x.code, x.stderr)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d dispatchers reserved the one lock, want exactly 1", round, won)
		}
		for _, x := range res {
			if x.code == 0 {
				r.mustLockctl(0, "release", "--slots", "2", "--token", strings.TrimSpace(x.stdout), l)
			}
		}
	}
	r.mustLockctl(0, "release", "--slots", "2", "--holder-pid", strconv.Itoa(busy.pid), l)
	testutil.WantNames(t, dir)
}

// TestAdoptRacesExpiry: a worker adopts as its reservation's grace ends,
// while an acquirer waits to break it. Either the worker holds the lock
// or the acquirer does, never both, whatever the timing.
func TestAdoptRacesExpiry(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	counts := map[string]int{}
	for round := range 20 {
		worker, other := r.sleeper(), r.sleeper()
		grace := time.Duration(20+rand.IntN(120)) * time.Millisecond
		res := r.mustLockctl(0, "reserve", "--grace", grace.String(), l)
		token := strings.TrimSpace(res.stdout)
		var wg sync.WaitGroup
		var adopt, acquire lcResult
		wg.Add(2)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(rand.IntN(int(grace))))
			adopt = r.lockctl(nil, "adopt", "--token", token, "--holder-pid", strconv.Itoa(worker.pid), l)
		}()
		go func() {
			defer wg.Done()
			acquire = r.lockctl(nil, "acquire", "--timeout", "1s", "--quiet", "--holder-pid", strconv.Itoa(other.pid), l)
		}()
		wg.Wait()
		got := r.judgeOne(l)
		switch {
		case adopt.code == 0 && acquire.code == 0:
			t.Fatalf("round %d (grace %s): both the worker adopted and the acquirer took the lock\nadopt: %s\nacquire: %s", round, grace, adopt.stderr, acquire.stderr)
		case adopt.code == 0:
			if got.Holder == nil || got.Holder.Pid != int64(worker.pid) || acquire.code != cli.ExitTimeout {
				t.Fatalf("round %d: adopted, but the lock reads %s held by %+v; acquire exited %d", round, got.Verdict, got.Holder, acquire.code)
			}
			counts["adopted"]++
		case acquire.code == 0:
			if got.Holder == nil || got.Holder.Pid != int64(other.pid) || !strings.Contains(adopt.stderr, "not") && !strings.Contains(adopt.stderr, "ended") {
				t.Fatalf("round %d: acquired, but the lock reads %s held by %+v; adopt said %s", round, got.Verdict, got.Holder, adopt.stderr)
			}
			counts["expired"]++
		default:
			t.Fatalf("round %d (grace %s): neither adopted (exit %d: %s) nor acquired (exit %d: %s)", round, grace, adopt.code, adopt.stderr, acquire.code, acquire.stderr)
		}
		worker.kill()
		other.kill()
		r.waitGone(worker.pid)
		r.waitGone(other.pid)
		r.mustLockctl(0, "doctor", "--fix", "--quiet", dir)
		testutil.WantNames(t, dir)
	}
	t.Logf("outcomes: %v", counts)
}

// TestCrashWhileAdopting: an adopter killed with the reservation claimed
// out of the lock leaves it held (claimed, by a gone adopter), and --fix
// puts the reservation back while its grace lasts; the dispatcher can then
// release it.
func TestCrashWhileAdopting(t *testing.T) {
	for _, point := range []string{"adopt-claimed", "adopt-moved"} {
		t.Run(point, func(t *testing.T) {
			r := lcNewReaper(t)
			dir := t.TempDir()
			l := filepath.Join(dir, "x.lock")
			token := strings.TrimSpace(r.mustLockctl(0, "reserve", "--grace", "1m", l).stdout)
			worker := r.sleeper()
			p, ok := r.pausedLockctl(point, "adopt", "--token", token, "--holder-pid", strconv.Itoa(worker.pid), l)
			if !ok {
				t.Fatalf("lockctl adopt ended without reaching %s: %s", point, p.errText())
			}
			if got := r.judgeOne(l); got.Verdict != "claimed" && got.Verdict != "live" {
				t.Errorf("paused at %s, the lock reads %s (%s): it must stay held", point, got.Verdict, got.Reason)
			}
			p.kill()
			r.waitGone(p.pid)
			got := r.doctor(dir)["x.lock"]
			if got.Verdict == "gone" || got.Verdict == "free" {
				t.Fatalf("killed at %s, the lock reads %s (%s): it must stay held", point, got.Verdict, got.Reason)
			}
			// Not sweepAll: the lock stays held, and --fix must leave it.
			if res := r.lockctl(nil, "doctor", "--fix", dir); res.code != 0 {
				t.Fatalf("doctor --fix: exit %d\n%s%s", res.code, res.stdout, res.stderr)
			}
			got = r.judgeOne(l)
			switch point {
			case "adopt-claimed":
				// The worker's record never went in: the reservation is
				// back, and only its dispatcher can give it up.
				if got.Verdict != "live" || !strings.Contains(got.Reason, "reserved for a worker") {
					t.Fatalf("after --fix: %s (%s), want the reservation back", got.Verdict, got.Reason)
				}
				r.mustLockctl(0, "release", "--token", token, l)
			case "adopt-moved":
				// The worker holds it; the claim left beside it is debris.
				if got.Verdict != "live" || got.Holder == nil || got.Holder.Pid != int64(worker.pid) {
					t.Fatalf("after --fix: %s (%s), want the worker's lock", got.Verdict, got.Reason)
				}
				r.mustLockctl(0, "release", "--holder-pid", strconv.Itoa(worker.pid), l)
			}
			testutil.WantNames(t, dir)
		})
	}
}

// TestReserveRefusesKernelLocks: a reservation outlives its reserver, so a
// kernel-lock path, held only by a process keeping it open, is refused.
func TestReserveRefusesKernelLocks(t *testing.T) {
	r := lcNewReaper(t)
	l := filepath.Join(t.TempDir(), "k.lock")
	res := r.lockctl(nil, "reserve", "--grace", "5s", "--kind", "flock", l)
	if res.code != cli.ExitError || !strings.Contains(res.stderr, "outlives") {
		t.Fatalf("reserve --kind flock: exit %d, want %d saying why\n%s", res.code, cli.ExitError, res.stderr)
	}
	// Nor are slots of one: a kernel lock has one holder.
	res = r.lockctl(nil, "run", "--slots", "2", "--kind", "flock", l, "--", "true")
	if res.code != cli.ExitError || !strings.Contains(res.stderr, "kernel lock has one") {
		t.Fatalf("run --slots 2 --kind flock: exit %d, want %d saying why\n%s", res.code, cli.ExitError, res.stderr)
	}
	testutil.WantNames(t, filepath.Dir(l))
}

// TestChaosReserve is TestChaosRun with dispatches: three workers loop
// lockctl run around a critical section, and three loop a dispatch, a
// reservation handed to a worker shell that adopts it, runs the section
// and releases, while lockctl processes of this test (run, reserve, adopt,
// release) are SIGKILLed at random. No two sections overlap; afterwards
// nothing is wedged. LOCKCTL_CHAOS_SECONDS sets the duration (default 5).
func TestChaosReserve(t *testing.T) {
	seconds := chaosSeconds(t)
	r := lcNewReaper(t)
	dir, aux := t.TempDir(), t.TempDir()
	l := filepath.Join(dir, "x.lock")
	logPath := filepath.Join(aux, "log")
	section := fmt.Sprintf(`echo "enter $$" >> %s; sleep 0.01; echo "exit $$" >> %s`, logPath, logPath)
	bin := lcBinary(t)
	// The worker enters only once adopt said the lock is its shell's.
	dispatch := fmt.Sprintf(`T=$(%[1]s reserve --quiet --grace 2s --timeout 3s %[2]s) || exit 0
exec sh -c '%[1]s adopt --token "$0" %[2]s || exit 0; %[3]s; %[1]s release %[2]s' "$T"`, bin, l, strings.ReplaceAll(strings.ReplaceAll(section, "$$", "d$$"), "'", `'\''`))
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				args := []string{bin, "run", "--timeout", "5s", "--quiet", l, "--", "sh", "-c", section}
				if i%2 == 1 {
					args = []string{"/bin/sh", "-c", dispatch}
				}
				p := r.start(nil, args...)
				if code := p.wait(60 * time.Second); code != 0 && code != 128+9 && i%2 == 0 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("run exited %d: %s", code, p.errText()))
					mu.Unlock()
				}
			}
		}()
	}
	kills := 0
	for time.Now().Before(end) {
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		if killOwnLockctl() {
			kills++
		}
	}
	wg.Wait()
	testutil.WaitFor(t, 30*time.Second, "every command to finish", func() bool { return len(lcChildren(os.Getpid())) == 0 })
	enters, violations := checkSections(lcReadOr(logPath))
	dispatched := strings.Count(lcReadOr(logPath), "enter d")
	t.Logf("%d sections (%d of them adopted workers') in %ds, %d lockctl processes SIGKILLed", enters, dispatched, seconds, kills)
	if dispatched == 0 {
		t.Errorf("no adopted worker ever entered: the dispatches tested nothing")
	}
	for i, v := range violations {
		if i == 10 {
			break
		}
		t.Errorf("two sections overlap: %s", v)
	}
	if len(failures) > 0 {
		t.Errorf("%d runs failed other than by a kill, e.g. %s", len(failures), failures[0])
	}
	if enters == 0 || kills == 0 {
		t.Errorf("%d entries, %d kills: the test tested nothing", enters, kills)
	}
	// Reservations left by killed dispatches end with their grace; then
	// the next run goes through.
	res := r.lockctl(nil, "run", "--timeout", "10s", l, "--", "true")
	if res.code != 0 {
		t.Fatalf("the next run: exit %d\n%s", res.code, res.stderr)
	}
	r.lockctl(nil, "doctor", "--fix", "--quiet", dir)
	for name, got := range r.doctor(dir) {
		switch got.Verdict {
		case "ownerless", "unknown", "live", "recycled", "foreign":
			t.Errorf("after the chaos %s is %s (%s)", name, got.Verdict, got.Reason)
		}
	}
}

// killOwnLockctl SIGKILLs one lockctl process descended from this test,
// chosen at random, pinned by a pidfd so that a pid reused meanwhile is
// never hit; it reports whether it did. Processes of other work on the
// machine are never touched.
func killOwnLockctl() bool {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	rand.Shuffle(len(pids), func(i, j int) { pids[i], pids[j] = pids[j], pids[i] })
	self := strconv.Itoa(os.Getpid())
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		p := strconv.Itoa(pid)
		ours := false
		for a, i := parentOf(p), 0; a != "" && a != "0" && i < 32; a, i = parentOf(a), i+1 {
			if a == self {
				ours = true
				break
			}
		}
		// A child of lockctl still reads "lockctl" between its fork and
		// its exec (run's CMD on its way to the gate): it is not a
		// lockctl process, and killing it tests nothing but that race.
		lockctlChild := strings.TrimSpace(lcReadOr("/proc/"+parentOf(p)+"/comm")) == "lockctl"
		if ours && !lockctlChild && strings.TrimSpace(lcReadOr("/proc/"+p+"/comm")) == "lockctl" && unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
			unix.Close(fd)
			return true
		}
		unix.Close(fd)
	}
	return false
}

//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/kernel"
)

// inTimeNS runs lockctl with args in a new time namespace whose boot
// time is shifted by 100000 s, as `unshare --time --boottime` makes one: the
// start times it reads in /proc/<pid>/stat are 10,000,000 ticks higher.
func (r *lcReaper) inTimeNS(args ...string) lcResult {
	r.t.Helper()
	return r.inShiftedNS("--boottime", args...)
}

// inShiftedNS runs lockctl with args in a new time namespace whose clock
// (unshare's --boottime or --monotonic) is shifted by 100000 s.
func (r *lcReaper) inShiftedNS(clock string, args ...string) lcResult {
	r.t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		r.t.Skip("no unshare (util-linux)")
	}
	if os.Geteuid() != 0 {
		r.t.Skip("unshare --time needs root")
	}
	if _, err := os.Stat("/proc/self/timens_offsets"); err != nil {
		r.t.Skipf("this kernel has no time namespaces: %v", err)
	}
	p := r.start(nil, append([]string{unshare, "--time", clock, "100000", "--fork", "--kill-child", lcBinary(r.t)}, args...)...)
	return lcResult{code: p.wait(60e9), stdout: p.outText(), stderr: p.errText()}
}

// TestTimeNamespace: a holder recorded from inside a time namespace is
// live to a reader outside it, and the other way round; the lock is not
// broken. Start times are compared as counted from the real boot.
func TestTimeNamespace(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	s := r.sleeper()

	// Recorded inside, judged outside.
	in := filepath.Join(dir, "in.lock")
	if res := r.inTimeNS("acquire", "--holder-pid", strconv.Itoa(s.pid), in); res.code != 0 {
		t.Fatalf("acquire in a time namespace: exit %d\n%s", res.code, res.stderr)
	}
	if got := r.doctor(dir)["in.lock"]; got.Verdict != "live" {
		t.Errorf("a live holder recorded in a time namespace reads %s outside it (%s), want live", got.Verdict, got.Reason)
	}
	before := testutil.Snapshot(t, dir)
	if res := r.lockctl(nil, "acquire", "--timeout", "300ms", in); res.code != cli.ExitTimeout {
		t.Errorf("acquire over it: exit %d, want %d (held)\n%s", res.code, cli.ExitTimeout, res.stderr)
	}
	testutil.SameTree(t, dir, before)

	// Recorded outside, judged inside.
	out := filepath.Join(dir, "out.lock")
	r.mustLockctl(0, "acquire", "--holder-pid", strconv.Itoa(s.pid), out)
	res := r.inTimeNS("doctor", "--json", dir)
	var doc lcDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("doctor in a time namespace: exit %d, %v\n%s\n%s", res.code, err, res.stdout, res.stderr)
	}
	for _, l := range doc.Locks {
		if l.Verdict != "live" {
			t.Errorf("in a time namespace, %s reads %s (%s), want live", l.Path, l.Verdict, l.Reason)
		}
	}
	if len(doc.Locks) != 2 {
		t.Errorf("doctor in a time namespace judged %d locks, want 2", len(doc.Locks))
	}
}

// TestTimeNamespaceNegative: in a time namespace whose boottime offset is
// negative and larger than a holder's start, the kernel shows that start
// wrapped below zero. The holder stays held there: doctor never reads it
// gone, and --fix leaves it.
func TestTimeNamespaceNegative(t *testing.T) {
	r := lcNewReaper(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare (util-linux)")
	}
	if _, err := os.Stat("/proc/self/timens_offsets"); err != nil {
		t.Skipf("this kernel has no time namespaces: %v", err)
	}
	dir := t.TempDir()
	s := r.sleeper()
	r.mustLockctl(0, "acquire", "--holder-pid", strconv.Itoa(s.pid), filepath.Join(dir, "x.lock"))
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	start, _ := strconv.ParseUint(f[19], 10, 64)
	// An offset just past the holder's start: the namespace's boot falls
	// after it. The kernel refuses an offset past the uptime, so wait for
	// the uptime to pass it.
	off := start/100 + 1
	testutil.WaitFor(t, 10*time.Second, "the uptime to pass the holder's start by a second", func() bool {
		u, _ := os.ReadFile("/proc/uptime")
		secs, _ := strconv.ParseFloat(strings.Fields(string(u) + " 0")[0], 64)
		return secs > float64(off)+0.2
	})
	before := testutil.Snapshot(t, dir)
	for _, args := range [][]string{{"doctor", "--json", dir}, {"doctor", "--fix", "--json", dir}} {
		p := r.start(nil, append([]string{unshare, "--time", "--boottime", "-" + strconv.FormatUint(off, 10), "--fork", "--kill-child", lcBinary(t)}, args...)...)
		code := p.wait(time.Minute)
		var doc lcDoc
		if err := json.Unmarshal([]byte(p.outText()), &doc); err != nil {
			t.Fatalf("%v: exit %d, %v\n%s\n%s", args, code, err, p.outText(), p.errText())
		}
		for _, l := range doc.Locks {
			if l.Verdict == "gone" {
				t.Errorf("%v with boottime offset -%ds: a live holder reads gone: %s", args, off, l.Reason)
			}
		}
	}
	testutil.SameTree(t, dir, before)
}

// inMonoNS runs lockctl with args in a new time namespace whose monotonic
// clock is shifted by 100000 s.
func (r *lcReaper) inMonoNS(args ...string) lcResult {
	r.t.Helper()
	return r.inShiftedNS("--monotonic", args...)
}

// TestReservationAcrossTimeNamespaces: a reservation's deadline is on the
// writer's monotonic clock. A reader whose clock is shifted otherwise
// cannot tell when it ends, and counts it as held; the writer's own
// namespace judges it by its deadline; nothing is broken either way.
func TestReservationAcrossTimeNamespaces(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	// Reserved inside, judged outside: held, though the grace has passed.
	in := filepath.Join(dir, "in.lock")
	if res := r.inMonoNS("reserve", "--grace", "1ms", in); res.code != 0 {
		t.Fatalf("reserve in a time namespace: exit %d\n%s", res.code, res.stderr)
	}
	got := r.judgeOne(in)
	if got.Verdict != "unknown" || !strings.Contains(got.Reason, "time namespace") {
		t.Errorf("an ended reservation from a shifted time namespace reads %s outside it (%s), want unknown", got.Verdict, got.Reason)
	}
	if res := r.lockctl(nil, "acquire", "--timeout", "300ms", in); res.code != cli.ExitTimeout {
		t.Errorf("acquire over it: exit %d, want %d (held)\n%s", res.code, cli.ExitTimeout, res.stderr)
	}
	// Reserved outside, judged inside: held too.
	out := filepath.Join(dir, "out.lock")
	r.mustLockctl(0, "reserve", "--grace", "1ms", out)
	res := r.inMonoNS("doctor", "--json", out)
	var doc lcDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || len(doc.Locks) != 1 {
		t.Fatalf("doctor in a time namespace: %v\n%s%s", err, res.stdout, res.stderr)
	}
	if v := doc.Locks[0].Verdict; v != "unknown" {
		t.Errorf("a reservation from outside reads %s in a shifted time namespace (%s), want unknown", v, doc.Locks[0].Reason)
	}
	// Outside, where it was written, it is judged by its deadline: gone.
	if got := r.judgeOne(out); got.Verdict != "gone" {
		t.Errorf("the ended reservation reads %s where it was written (%s), want gone", got.Verdict, got.Reason)
	}
}

// filelockInTimeNS starts a holder the way Python's filelock would be run
// in unshare --time --boottime 1000 --monotonic 1000 --fork: a shell that
// reads field 22 of its own /proc/<pid>/stat there (with the namespace's
// offset in it, as filelock's _identity.py reads it), then, if stay, execs
// sleep (same pid, same start). It returns the unshare process, the
// holder's pid and its SoftFileLock record as filelock writes it:
// "<pid>\n<host>\n<(boot id << 64) | field 22>\n".
func (r *lcReaper) filelockInTimeNS(stay bool) (p *lcProc, pid int, record string) {
	r.t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		r.t.Skip("needs root and unshare (util-linux)")
	}
	if _, err := os.Readlink("/proc/self/ns/time"); err != nil {
		r.t.Skipf("this kernel has no time namespaces: %v", err)
	}
	script := `read s < /proc/$$/stat; set -- ${s##*) }; shift 19; echo $$ $1`
	if stay {
		script += `; exec sleep 3600`
	}
	p = r.start(nil, unshare, "--time", "--boottime", "1000", "--monotonic", "1000", "--fork", "--kill-child", "/bin/sh", "-c", script)
	var start uint64
	testutil.WaitFor(r.t, 10*time.Second, "the holder's field 22", func() bool {
		f := strings.Fields(p.outText())
		if len(f) != 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[0])
		start, _ = strconv.ParseUint(f[1], 10, 64)
		return pid > 0 && start > 0
	})
	host := kernel.LocalHost()
	boot, ok := new(big.Int).SetString(strings.ReplaceAll(host.BootID, "-", ""), 16)
	if !ok {
		r.t.Fatalf("boot id %q", host.BootID)
	}
	tok := new(big.Int).Or(new(big.Int).Lsh(boot, 64), new(big.Int).SetUint64(start))
	return p, pid, fmt.Sprintf("%d\n%s\n%s\n", pid, host.Name, tok)
}

// TestFilelockTimeNamespace: a filelock record holds field 22 as its
// writer read it, in its own time namespace's clock. Read from the host,
// the live holder's start time is another number: that proves nothing
// (unknown), and --fix keeps the lock. Read inside the holder's time
// namespace (nsenter -T), the start time matches: live, kept. A holder of
// the same setup that has exited is still gone from the host, and --fix
// removes its lock.
func TestFilelockTimeNamespace(t *testing.T) {
	r := lcNewReaper(t)
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("no nsenter (util-linux)")
	}
	dir := t.TempDir()
	_, live, liveRec := r.filelockInTimeNS(true)
	testutil.WriteFile(t, filepath.Join(dir, "live.lock"), []byte(liveRec))
	ended, gone, rec := r.filelockInTimeNS(false)
	testutil.WriteFile(t, filepath.Join(dir, "gone.lock"), []byte(rec))
	ended.wait(10 * time.Second)
	r.waitGone(gone)

	// From the host.
	got := r.doctor(dir)
	if g := got["live.lock"]; g.Verdict != "unknown" || g.Producer != "filelock" || !strings.Contains(g.Reason, "time namespace") {
		t.Errorf("from the host, a live filelock holder in another time namespace reads %s of %q (%s), want unknown, naming the time namespaces", g.Verdict, g.Producer, g.Reason)
	}
	if g := got["gone.lock"]; g.Verdict != "gone" {
		t.Errorf("from the host, an exited filelock holder of a time namespace reads %s (%s), want gone", g.Verdict, g.Reason)
	}
	r.lockctl(nil, "doctor", "--fix", dir)
	if !lcExists(filepath.Join(dir, "live.lock")) {
		t.Errorf("doctor --fix from the host removed the lock of live pid %d", live)
		testutil.WriteFile(t, filepath.Join(dir, "live.lock"), []byte(liveRec)) // for the next part
	}
	if lcExists(filepath.Join(dir, "gone.lock")) {
		t.Errorf("doctor --fix from the host kept the lock of exited pid %d", gone)
	}

	// From inside the holder's time namespace.
	p := r.start(nil, nsenter, "-t", strconv.Itoa(live), "-T", lcBinary(t), "doctor", "--fix", "--json", dir)
	code := p.wait(time.Minute)
	var doc lcDoc
	if err := json.Unmarshal([]byte(p.outText()), &doc); err != nil || len(doc.Locks) != 1 {
		t.Fatalf("doctor --fix inside the holder's time namespace: exit %d, %v\n%s\n%s", code, err, p.outText(), p.errText())
	}
	if l := doc.Locks[0]; l.Verdict != "live" {
		t.Errorf("inside its own time namespace, the live filelock holder reads %s (%s), want live", l.Verdict, l.Reason)
	}
	if !lcExists(filepath.Join(dir, "live.lock")) {
		t.Errorf("doctor --fix inside the holder's time namespace removed the lock of live pid %d", live)
	}
}

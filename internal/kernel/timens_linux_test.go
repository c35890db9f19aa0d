//go:build linux

package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"golang.org/x/sys/unix"
)

// The roles this test binary plays for the time namespace tests, named by
// timensRoleEnv: clockRole prints what the probe says of the pids in
// timensPidsEnv (run under nsenter -T, inside a holder's time namespace);
// unsharedRole first leaves its time namespace by unshare(2), without an
// exec, and prints what the probe and LocalHost say of itself.
const (
	timensRoleEnv = "LOCKCTL_TEST_TIMENS_ROLE"
	timensPidsEnv = "LOCKCTL_TEST_TIMENS_PIDS"
	clockRole     = "clock"
	unsharedRole  = "unshared"
)

// clockReport is what a role prints of one pid.
type clockReport struct {
	Pid       int
	SameClock string // "" for nil
	HasStart  bool
	Start     uint64
	HasShown  bool
	Shown     uint64
	Field22   uint64 // as this process reads /proc/<pid>/stat itself
}

// unsharedReport is what unsharedRole prints.
type unsharedReport struct {
	Own, Children string // its ns/time and ns/time_for_children links
	Self          clockReport
	BootTimeZero  bool
	ClockErr      string
}

func init() {
	// init runs on the main thread, which is the thread /proc/self names:
	// an unshare(2) here changes what /proc/self/ns/time_for_children and
	// /proc/self/timens_offsets show.
	switch os.Getenv(timensRoleEnv) {
	case clockRole:
		var out []clockReport
		for _, s := range strings.Fields(os.Getenv(timensPidsEnv)) {
			pid, _ := strconv.Atoi(s)
			out = append(out, reportClock(pid))
		}
		json.NewEncoder(os.Stdout).Encode(out)
		os.Exit(0)
	case unsharedRole:
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWTIME); err != nil {
			fmt.Fprintln(os.Stderr, "unshare:", err)
			os.Exit(2)
		}
		// The new namespace is empty until a child enters it: its offsets
		// can still be set, here through this process's own file.
		if err := os.WriteFile("/proc/self/timens_offsets", []byte("boottime 10 0\nmonotonic 10 0\n"), 0); err != nil {
			fmt.Fprintln(os.Stderr, "timens_offsets:", err)
			os.Exit(2)
		}
		own, _ := os.Readlink("/proc/self/ns/time")
		kids, _ := os.Readlink("/proc/self/ns/time_for_children")
		h := LocalHost()
		json.NewEncoder(os.Stdout).Encode(unsharedReport{
			Own: own, Children: kids, Self: reportClock(os.Getpid()),
			BootTimeZero: h.BootTime.IsZero(), ClockErr: errString(h.ClockErr),
		})
		os.Exit(0)
	}
}

func reportClock(pid int) clockReport {
	r := clockReport{Pid: pid, SameClock: errString(KernelProbe{}.SameClock(pid))}
	p := KernelProbe{}.Probe(pid)
	r.HasStart, r.Start, r.HasShown, r.Shown = p.HasStart, p.Start, p.HasShown, p.Shown
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if _, _, start, err := ParseStat(b); err == nil {
			r.Field22 = start
		}
	}
	return r
}

// timensTools skips the test unless it can make time namespaces.
func timensTools(t *testing.T, tools ...string) map[string]string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a time namespace needs root")
	}
	if _, err := os.Readlink("/proc/self/ns/time"); err != nil {
		t.Skipf("this kernel has no time namespaces: %v", err)
	}
	paths := map[string]string{}
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("no %s (util-linux)", tool)
		}
		paths[tool] = p
	}
	return paths
}

// shiftedSleeper starts sleep in a new time namespace whose boot and
// monotonic clocks are 1000 s ahead (unshare --time --boottime 1000
// --monotonic 1000 --fork --kill-child sleep), and returns unshare's pid
// (still in this test's time namespace) and sleep's. Cleanup kills
// unshare, which takes sleep with it, and reaps it.
func shiftedSleeper(t *testing.T, unshare string) (outer, inner int) {
	t.Helper()
	cmd := exec.Command(unshare, "--time", "--boottime", "1000", "--monotonic", "1000", "--fork", "--kill-child", "sleep", "3600")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start unshare --time: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	outer = cmd.Process.Pid
	testutil.WaitFor(t, 10*time.Second, "sleep in the new time namespace", func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", outer, outer))
		kids := strings.Fields(string(b))
		if len(kids) != 1 {
			return false
		}
		inner, _ = strconv.Atoi(kids[0])
		c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", inner))
		return strings.TrimSpace(string(c)) == "sleep"
	})
	return outer, inner
}

// TestSameClock: field 22 of a process in another time namespace is shown
// to this reader in this reader's clock, not in the one that process reads
// it in; SameClock says so, and says yes for a process in the reader's own
// time namespace, even one whose children are made in another (unshare,
// which forked sleep into the new one). Inside the holder's namespace
// (nsenter -T) it is the other way round, and field 22 as shown there is
// the process's own reading, with the offset in it, while Start stays
// counted from the real boot.
func TestSameClock(t *testing.T) {
	tools := timensTools(t, "unshare", "nsenter")
	outer, inner := shiftedSleeper(t, tools["unshare"])
	host := testutil.Sleeper(t).Process.Pid
	own, _ := os.Readlink("/proc/self/ns/time")
	shifted, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/time", inner))
	if err != nil || shifted == own {
		t.Fatalf("sleep's time namespace is %q (%v), this test's %q: want another", shifted, err, own)
	}

	// From the host.
	err = KernelProbe{}.SameClock(inner)
	if err == nil || !strings.Contains(err.Error(), shifted) || !strings.Contains(err.Error(), own) {
		t.Errorf("SameClock(%d), a process in %s, from %s = %v, want an error naming both", inner, shifted, own, err)
	}
	for _, pid := range []int{os.Getpid(), host, outer} {
		if err := (KernelProbe{}).SameClock(pid); err != nil {
			t.Errorf("SameClock(%d), a process in this reader's time namespace = %v, want nil", pid, err)
		}
	}
	p := KernelProbe{}.Probe(inner)
	if off := bootOffset(); off.err != nil || !p.HasStart || !p.HasShown || p.Shown != uint64(int64(p.Start)+off.ticks) {
		t.Errorf("Probe(%d) from the test's time namespace (boottime offset %d ticks, %v) = %+v, want Shown = Start + that offset", inner, off.ticks, off.err, p)
	}

	// From inside the holder's time namespace.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tools["nsenter"], "-t", strconv.Itoa(inner), "-T", self)
	cmd.Env = append(os.Environ(), timensRoleEnv+"="+clockRole, fmt.Sprintf("%s=%d %d", timensPidsEnv, inner, host))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nsenter -T: %v\n%s", err, out)
	}
	var in []clockReport
	if err := json.Unmarshal(out, &in); err != nil || len(in) != 2 {
		t.Fatalf("inside: %v\n%s", err, out)
	}
	ticks := uint64(clockTicks())
	if r := in[0]; r.SameClock != "" || !r.HasShown || r.Shown != r.Field22 || !r.HasStart || r.Start != p.Start || r.Shown != p.Start+1000*ticks {
		t.Errorf("inside its time namespace, of sleep: %+v, want SameClock nil, Shown = field 22 there = %d, Start = %d as the host reads it", r, p.Start+1000*ticks, p.Start)
	}
	if r := in[1]; r.SameClock == "" || !strings.Contains(r.SameClock, own) || !strings.Contains(r.SameClock, shifted) {
		t.Errorf("inside %s, SameClock of a host process = %q, want an error naming %s and %s", shifted, r.SameClock, own, shifted)
	}
}

// TestOffsetsOfAnotherNamespace: a process that has left its time
// namespace by unshare(2), without an exec, stays in the old one, and its
// /proc/self/timens_offsets shows the new one's offsets. They are not its
// own: no start time is taken from them, nor btime, nor the monotonic
// offset, and SameClock proves nothing of it.
func TestOffsetsOfAnotherNamespace(t *testing.T) {
	timensTools(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), timensRoleEnv+"="+unsharedRole)
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("unshare(CLONE_NEWTIME) in a helper: %v\n%s", err, out)
	}
	var got unsharedReport
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Own == got.Children || got.Own == "" {
		t.Fatalf("after unshare(CLONE_NEWTIME) the helper's ns/time is %q and ns/time_for_children %q: want them to differ", got.Own, got.Children)
	}
	s := got.Self
	if !s.HasShown || s.Shown != s.Field22 {
		t.Errorf("Probe(itself).Shown = %d (%v), want field 22 as it reads it, %d", s.Shown, s.HasShown, s.Field22)
	}
	if s.HasStart {
		t.Errorf("Probe(itself) in time namespace %s, children's %s = start %d (field 22 %d): want no start time, the offsets shown are not its own", got.Own, got.Children, s.Start, s.Field22)
	}
	if !got.BootTimeZero || got.ClockErr == "" {
		t.Errorf("LocalHost() there: btime known %v, monotonic offset error %q: want neither taken from another namespace's offsets", !got.BootTimeZero, got.ClockErr)
	}
	if s.SameClock == "" {
		t.Errorf("SameClock(itself) there = nil, want an error: its offsets cannot be read")
	}
}

//go:build linux

package kernel

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// The roles this test binary plays when a test re-runs it as another user
// (the pattern of TestSpuriousEDEADLK in Go's cmd/go/internal/lockedfile).
const (
	roleEnv           = "LOCKCTL_VERDICT_TEST_ROLE"
	rolePidEnv        = "LOCKCTL_VERDICT_TEST_PID"
	roleProbeAsNobody = "probe-as-nobody"
	resultMarker      = "lockctl-probe-result:"
	nobody            = 65534
)

// Every child these tests start is waited for: pid 1 here does not reap
// orphans, so an unwaited child would stay a zombie for the life of the
// machine.

// statFields reads /proc/<pid>/stat of a process whose command is comm and
// returns its fields from field 3 (the state) on. It does not use ParseStat:
// knowing comm, it can strip "<pid> (<comm>) " and split the rest.
func statFields(t *testing.T, pid int, comm string) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("cannot read the stat of pid %d: %v", pid, err)
	}
	rest, ok := strings.CutPrefix(string(b), fmt.Sprintf("%d (%s) ", pid, comm))
	if !ok {
		t.Fatalf("/proc/%d/stat = %q, want it to start with %q", pid, b, fmt.Sprintf("%d (%s) ", pid, comm))
	}
	return strings.Fields(rest)
}

func TestKernelProbeRunning(t *testing.T) {
	cmd := testutil.Sleeper(t)
	pid := cmd.Process.Pid
	for name, probe := range map[string]func(int) verdict.Proc{"Probe": KernelProbe{}.Probe, "probeKill": probeKill} {
		got := probe(pid)
		if got.State != verdict.StateRunning || !got.HasStart || got.Denied || got.Comm != "sleep" || got.Err != nil {
			t.Errorf("%s(%d) = %+v, want running sleep with a start time, not denied, no error", name, pid, got)
		}
	}
}

// TestKernelProbeStartTime checks the start time against field 22 of
// /proc/<pid>/stat read here, and its conversion to wall time against the
// clock when the process was started.
func TestKernelProbeStartTime(t *testing.T) {
	before := time.Now()
	cmd := testutil.Sleeper(t)
	after := time.Now()
	pid := cmd.Process.Pid

	want, err := strconv.ParseUint(statFields(t, pid, "sleep")[22-3], 10, 64)
	if err != nil {
		t.Fatalf("field 22 of /proc/%d/stat: %v", pid, err)
	}
	got := KernelProbe{}.Probe(pid)
	if !got.HasStart || got.Start != want {
		t.Errorf("Probe(%d) = start %d (HasStart %v), want %d, true", pid, got.Start, got.HasStart, want)
	}
	// verdict.Evidence only, but the recycled verdict rests on it: btime has
	// one-second resolution, so allow a few seconds either way.
	started := LocalHost().Started(got.Start)
	if started.Before(before.Add(-3*time.Second)) || started.After(after.Add(3*time.Second)) {
		t.Errorf("LocalHost().Started(%d) = %v, want between %v and %v", got.Start, started, before, after)
	}
}

func TestKernelProbeReaped(t *testing.T) {
	pid := testutil.Gone(t)
	for name, probe := range map[string]func(int) verdict.Proc{"Probe": KernelProbe{}.Probe, "probeKill": probeKill} {
		if got := probe(pid); got.State != verdict.StateAbsent {
			t.Errorf("%s(%d) = %+v, want absent (the process exited and was reaped)", name, pid, got)
		}
	}
}

// TestKernelProbeZombie leaves a child exited and unwaited. kill(pid, 0)
// succeeds on it, which is why kill alone cannot tell a holder is gone.
func TestKernelProbeZombie(t *testing.T) {
	cmd := testutil.Zombie(t)
	pid := cmd.Process.Pid

	if err := unix.Kill(pid, 0); err != nil {
		t.Errorf("kill(%d, 0) = %v, want nil: a zombie exists until it is reaped", pid, err)
	}
	for name, probe := range map[string]func(int) verdict.Proc{"Probe": KernelProbe{}.Probe, "probeKill": probeKill} {
		if got := probe(pid); got.State != verdict.StateZombie || got.Comm != "true" {
			t.Errorf("%s(%d) = %+v, want a zombie named true", name, pid, got)
		}
	}
	j := &verdict.Judge{Host: LocalHost(), Probe: KernelProbe{}}
	l := pidLockNow(pid)
	if got := j.Judge(l); got.Verdict != verdict.Gone {
		t.Errorf("Judge(pid file of zombie %d) = %s (%s), want gone", pid, got.Verdict, got.Reason)
	}

	if err := cmd.Wait(); err != nil {
		t.Fatalf("cannot reap pid %d: %v", pid, err)
	}
	if got := (KernelProbe{}).Probe(pid); got.State != verdict.StateAbsent {
		t.Errorf("Probe(%d) after reaping = %+v, want absent", pid, got)
	}
}

// TestKernelProbeNotAPid: kill(0, sig) signals the caller's process group
// and kill(-1, sig) every process it may signal, so neither may be asked.
func TestKernelProbeNotAPid(t *testing.T) {
	for _, pid := range []int{0, -1, -2, -os.Getpid(), -1 << 31} {
		if got := (KernelProbe{}).Probe(pid); got.State != verdict.StateUnknown || got.Err == nil {
			t.Errorf("Probe(%d) = %+v, want unknown with an error", pid, got)
		}
	}
}

// TestKernelProbeThreadID probes a thread that is not a thread-group
// leader: pidfd_open refuses it (EINVAL) and the probe falls back to kill.
func TestKernelProbeThreadID(t *testing.T) {
	tids := make(chan int)
	done := make(chan struct{})
	defer close(done)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		tids <- unix.Gettid()
		<-done
	}()
	tid := <-tids
	if tid == os.Getpid() {
		t.Skip("the goroutine landed on the main thread")
	}
	if got := (KernelProbe{}).Probe(tid); got.State != verdict.StateRunning {
		t.Errorf("Probe(%d) = %+v, want running (a live thread of this process)", tid, got)
	}
}

// TestJudgeKernelProbe judges a pid file of a real process, then of the
// same pid once the process is gone.
func TestJudgeKernelProbe(t *testing.T) {
	cmd := testutil.Sleeper(t)
	pid := cmd.Process.Pid
	j := &verdict.Judge{Host: LocalHost(), Probe: KernelProbe{}}
	l := pidLockNow(pid)
	if got := j.Judge(l); got.Verdict != verdict.Live || len(got.Remove) != 0 {
		t.Errorf("Judge(pid file of running sleep %d) = %s (%s) with Remove %v, want live, no remedy", pid, got.Verdict, got.Reason, got.Remove)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := j.Judge(l); got.Verdict != verdict.Gone {
		t.Errorf("Judge(pid file of reaped sleep %d) = %s (%s), want gone", pid, got.Verdict, got.Reason)
	}
}

type childResult struct {
	Probe    string
	Uid      int
	State    verdict.State
	Denied   bool
	HasStart bool
	Err      string
}

// TestKernelProbeEPERM re-runs this test binary as nobody to probe this
// (root's) process: the kernel says EPERM, and that is alive, never gone.
func TestKernelProbeEPERM(t *testing.T) {
	if os.Getenv(roleEnv) == roleProbeAsNobody {
		probeAsChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test re-runs itself as nobody to probe a process nobody may not signal")
	}
	dir, bin := publicTestBinary(t)

	cmd := exec.Command(bin, "-test.run=^TestKernelProbeEPERM$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), roleEnv+"="+roleProbeAsNobody, fmt.Sprintf("%s=%d", rolePidEnv, os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child as nobody failed: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), resultMarker)
		if !ok {
			continue
		}
		var r childResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("cannot read the child's result %q: %v", line, err)
		}
		seen[r.Probe] = true
		t.Logf("%s(%d) as nobody = %+v", r.Probe, os.Getpid(), r)
		if r.Uid != nobody {
			t.Fatalf("the child ran as uid %d, want %d", r.Uid, nobody)
		}
		if r.State != verdict.StateRunning || !r.Denied {
			t.Errorf("%s(%d) as nobody = %+v, want running and denied (EPERM is alive)", r.Probe, os.Getpid(), r)
		}
	}
	if !seen["Probe"] || !seen["probeKill"] {
		t.Fatalf("the child reported %v, want Probe and probeKill; its output:\n%s", seen, out)
	}
}

func probeAsChild(t *testing.T) {
	pid, err := strconv.Atoi(os.Getenv(rolePidEnv))
	if err != nil {
		t.Fatalf("%s: %v", rolePidEnv, err)
	}
	for _, r := range []struct {
		name string
		p    verdict.Proc
	}{{"Probe", KernelProbe{}.Probe(pid)}, {"probeKill", probeKill(pid)}} {
		res := childResult{Probe: r.name, Uid: os.Getuid(), State: r.p.State, Denied: r.p.Denied, HasStart: r.p.HasStart}
		if r.p.Err != nil {
			res.Err = r.p.Err.Error()
		}
		b, _ := json.Marshal(res)
		fmt.Printf("%s%s\n", resultMarker, b)
	}
}

// publicTestBinary copies this test binary into a new 0755 directory
// outside t.TempDir (whose parents may be 0700), so that nobody can run it,
// and returns the directory and the copy.
func publicTestBinary(t *testing.T) (dir, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "lockctl-kernel-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "kernel.test")
	copyExecutable(t, testExe(t), bin)
	return dir, bin
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestLocalHost(t *testing.T) {
	h := LocalHost()

	machineID := ""
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		machineID = strings.SplitN(string(b), "\n", 2)[0]
	}
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	bootID := strings.TrimSuffix(string(b), "\n")
	pidNS, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	if h.BootID != bootID || h.PidNS != pidNS || h.MachineID != machineID {
		t.Errorf("LocalHost() = boot %q, pid namespace %q, machine %q, want %q, %q, %q", h.BootID, h.PidNS, h.MachineID, bootID, pidNS, machineID)
	}
	if machineID == "" {
		if h.Scope != "" || h.ScopeErr == nil {
			t.Errorf("LocalHost() = scope %q, error %v without a machine id, want no scope and an error", h.Scope, h.ScopeErr)
		}
	} else {
		sum := sha256.Sum256([]byte("agmsg-lock-scope:" + machineID + ":" + bootID + ":" + pidNS))
		if want := hex.EncodeToString(sum[:]); h.Scope != want || h.ScopeErr != nil {
			t.Errorf("LocalHost().Scope = %q (%v), want %q", h.Scope, h.ScopeErr, want)
		}
	}

	b, err = os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if h.PidMax != pidMax {
		t.Errorf("LocalHost().PidMax = %d, want %d", h.PidMax, pidMax)
	}
	if h.Ticks <= 0 {
		t.Errorf("LocalHost().Ticks = %d, want > 0", h.Ticks)
	}
	if h.BootTime.IsZero() || h.BootTime.After(time.Now()) {
		t.Errorf("LocalHost().BootTime = %v, want a time before now", h.BootTime)
	}
	if name, err := os.Hostname(); err == nil && h.Name != name {
		t.Errorf("LocalHost().Name = %q, want %q", h.Name, name)
	}
}

// TestScopeDigest checks one digest computed outside Go, with
// printf 'agmsg-lock-scope:%s:%s:%s' MID BOOT NS | sha256sum.
func TestScopeDigest(t *testing.T) {
	const want = "704808a8dbd80dc1c1463144cb711cb8e4bf35580ffdf174a06528a6d95fc232"
	if got := verdict.ScopeDigest("3d1219c7c4c5404aaa1f6d2a48adfda4", "e413c8f9-0a7a-4537-9745-0f7247d36377", "pid:[4026531836]"); got != want {
		t.Errorf("ScopeDigest(...) = %s, want %s", got, want)
	}
}

// pidLockNow is a pid file naming pid, written now.
func pidLockNow(pid int) *scan.Lock {
	now := fsx.Stat{Mode: 0o644, Nlink: 1, Size: 8, Mtime: time.Now()}
	h := &scan.Holder{Pid: int64(pid), PidText: strconv.Itoa(pid)}
	return &scan.Lock{
		Path: "/run/lock/x.lock", Dir: "/run/lock", Name: "x.lock", Kind: scan.KindFile, Info: now, Format: scan.FormatPid,
		Holders: []scan.Record{{File: "x.lock", Info: now, Raw: []byte(h.PidText + "\n"), Holder: h}},
	}
}

package verdict_test

// Benchmarks of one judgement and of the kernel probe
// (docs/performance.md). They run only under -bench.

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// benchProbe answers from a map; a pid missing from it is not running.
type benchProbe map[int]verdict.Proc

func (p benchProbe) Probe(pid int) verdict.Proc {
	if q, ok := p[pid]; ok {
		return q
	}
	return verdict.Proc{State: verdict.StateAbsent}
}

// benchLockctl is a lock in lockctl's own format naming pid, fenced by start.
func benchLockctl(host verdict.Host, pid int, start uint64) *scan.Lock {
	h := &scan.Holder{
		Pid: int64(pid), PidText: strconv.Itoa(pid), Start: start, HasStart: true,
		BootID: host.BootID, PidNS: host.PidNS, Host: host.Name, Command: "bench",
		Token: strconv.Itoa(pid) + ".0123456789abcdef0123456789abcdef.1", Since: time.Now().Add(-time.Minute),
	}
	return &scan.Lock{
		Path: "/run/lock/bench/x.lock", Dir: "/run/lock/bench", Name: "x.lock",
		Kind: scan.KindDir, Format: scan.FormatLockctl,
		Info:    fsx.Stat{Mode: os.ModeDir | 0o755, Nlink: 2, Mtime: h.Since},
		Holders: []scan.Record{{File: "x.lock/holder", Holder: h, Info: fsx.Stat{Mode: 0o644, Nlink: 1, Mtime: h.Since}}},
	}
}

// benchPidLock is a pid file naming pid, written just now (a pid file
// older than its process reads as recycled).
func benchPidLock(pid int) *scan.Lock {
	t := time.Now()
	h := &scan.Holder{Pid: int64(pid), PidText: strconv.Itoa(pid)}
	return &scan.Lock{
		Path: "/run/lock/bench/y.lock", Dir: "/run/lock/bench", Name: "y.lock",
		Kind: scan.KindFile, Format: scan.FormatPid,
		Info:    fsx.Stat{Mode: 0o644, Nlink: 1, Size: 6, Mtime: t},
		Holders: []scan.Record{{File: "y.lock", Holder: h, Raw: []byte(h.PidText + "\n"), Info: fsx.Stat{Mode: 0o644, Nlink: 1, Size: 6, Mtime: t}}},
	}
}

// benchEmptyDir is an owner-less lock: an empty directory.
func benchEmptyDir() *scan.Lock {
	return &scan.Lock{
		Path: "/run/lock/bench/z.lock", Dir: "/run/lock/bench", Name: "z.lock",
		Kind: scan.KindDir, Format: scan.FormatEmpty,
		Info: fsx.Stat{Mode: os.ModeDir | 0o755, Nlink: 2, Mtime: time.Now().Add(-time.Minute)},
	}
}

// benchStart reads the start time of a running pid.
func benchStart(b *testing.B, pid int) uint64 {
	b.Helper()
	p := kernel.KernelProbe{}.Probe(pid)
	if p.State != verdict.StateRunning || !p.HasStart {
		b.Fatalf("pid %d: state %v, start time read %v (%v)", pid, p.State, p.HasStart, p.Err)
	}
	return p.Start
}

// benchReapedPid returns the pid of a process that ran and was reaped.
func benchReapedPid(b *testing.B) int {
	b.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		b.Fatal(err)
	}
	return c.Process.Pid
}

// benchZombie starts a child that exits and is left unreaped until the
// benchmark ends, and returns its pid once it is a zombie.
func benchZombie(b *testing.B) int {
	b.Helper()
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Wait() })
	pid := c.Process.Pid
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err == nil {
			if i := strings.LastIndexByte(string(data), ')'); i > 0 && strings.HasPrefix(string(data[i:]), ") Z") {
				return pid
			}
		}
	}
	b.Fatalf("pid %d did not become a zombie", pid)
	return 0
}

func benchSleep(b *testing.B) int {
	b.Helper()
	c := exec.Command("sleep", "600")
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c.Process.Pid
}

func benchJudge(b *testing.B, j *verdict.Judge, l *scan.Lock, want verdict.Verdict) {
	b.Helper()
	if r := j.Judge(l); r.Verdict != want {
		b.Fatalf("judged %s (%s), want %s", r.Verdict, r.Reason, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = j.Judge(l)
	}
}

// BenchmarkJudge is one judgement of one lock: with a fake probe (the cost
// of the judgement itself), with the real KernelProbe on a live and a
// reaped pid (what every lock costs without the cache), and with a warm
// CachingProbe (what each further lock of a shared holder costs).
func BenchmarkJudge(b *testing.B) {
	host := kernel.LocalHost()
	self := os.Getpid()
	start := benchStart(b, self)
	gone := benchReapedPid(b)

	fake := &verdict.Judge{Host: host, Probe: benchProbe{self: {State: verdict.StateRunning, Start: start, HasStart: true, Comm: "bench"}}}
	b.Run("fake/live-lockctl", func(b *testing.B) { benchJudge(b, fake, benchLockctl(host, self, start), verdict.Live) })
	b.Run("fake/live-pid", func(b *testing.B) { benchJudge(b, fake, benchPidLock(self), verdict.Live) })
	b.Run("fake/gone-pid", func(b *testing.B) { benchJudge(b, fake, benchPidLock(gone), verdict.Gone) })
	b.Run("fake/ownerless-dir", func(b *testing.B) { benchJudge(b, fake, benchEmptyDir(), verdict.Ownerless) })

	kj := &verdict.Judge{Host: host, Probe: kernel.KernelProbe{}}
	b.Run("kernel/live-lockctl", func(b *testing.B) { benchJudge(b, kj, benchLockctl(host, self, start), verdict.Live) })
	b.Run("kernel/live-pid", func(b *testing.B) { benchJudge(b, kj, benchPidLock(self), verdict.Live) })
	b.Run("kernel/gone-pid", func(b *testing.B) { benchJudge(b, kj, benchPidLock(gone), verdict.Gone) })

	caching := &verdict.Judge{Host: host, Probe: &verdict.CachingProbe{Next: kernel.KernelProbe{}}}
	b.Run("caching/live-lockctl", func(b *testing.B) { benchJudge(b, caching, benchLockctl(host, self, start), verdict.Live) })
	b.Run("caching/gone-pid", func(b *testing.B) { benchJudge(b, caching, benchPidLock(gone), verdict.Gone) })
}

// BenchmarkKernelProbe is one probe of one pid: pidfd_open, a read of
// /proc/<pid>/stat and pidfd_send_signal for a process that exists, one
// failed pidfd_open for one that does not.
func BenchmarkKernelProbe(b *testing.B) {
	cases := []struct {
		name string
		pid  func(*testing.B) int
		want verdict.State
	}{
		{"self", func(*testing.B) int { return os.Getpid() }, verdict.StateRunning},
		{"running", benchSleep, verdict.StateRunning},
		{"zombie", benchZombie, verdict.StateZombie},
		{"reaped", benchReapedPid, verdict.StateAbsent},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			pid := c.pid(b)
			p := kernel.KernelProbe{}
			if got := p.Probe(pid); got.State != c.want {
				b.Fatalf("Probe(%d) = %v (%v), want state %v", pid, got.State, got.Err, c.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = p.Probe(pid)
			}
		})
	}
}

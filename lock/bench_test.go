package lock_test

// Benchmarks of Acquire + Release (issue 4, section 8; docs/performance.md).
// They run only under -bench. TestBenchContendedWorker is the body of the
// worker processes BenchmarkContended starts; run any other way it skips.

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/lock"
)

// The environment of a contended worker process.
const (
	benchRoleEnv  = "LOCKCTL_BENCH_ROLE" // "contend" in a worker
	benchLockEnv  = "LOCKCTL_BENCH_LOCK" // the lock to loop on
	benchBeginEnv = "LOCKCTL_BENCH_BEGIN"
	benchEndEnv   = "LOCKCTL_BENCH_END" // unix nanoseconds: the window to loop in
	benchInside   = ".bench-inside"     // exists only while someone holds the lock
	benchResult   = "lockctl-bench-result"
)

// benchFS are the places the benchmarks lock in: tmpfs and the disk.
var benchFS = []struct{ name, parent string }{
	{"tmpfs", "/dev/shm"},
	{"disk", os.TempDir()},
}

func benchDir(b *testing.B, parent string) string {
	b.Helper()
	dir, err := os.MkdirTemp(parent, "lockctl-bench-")
	if err != nil {
		b.Skipf("cannot make a directory in %s: %v", parent, err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// BenchmarkAcquireRelease is one uncontended Acquire followed by Release.
// The target (issue 4) is a median of at most 100 µs on tmpfs; on disk the
// fsyncs of the record and of the registry dominate. Take the median over
// -count.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, f := range benchFS {
		b.Run(f.name, func(b *testing.B) {
			p := filepath.Join(benchDir(b, f.parent), "x.lock")
			ctx := context.Background()
			var took []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				l, err := lock.Acquire(ctx, p, lock.Options{Kernel: judges.Kernel{}})
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			// The median and the 99th percentile of single iterations,
			// beside the mean that ns/op is.
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// BenchmarkFsyncFloor is the durability Acquire pays, without lockctl: make
// a directory, create a record in it, write and fsync it, fsync the
// directory, rename it into place and fsync the registry; then remove both
// (as Release does, without fsync). On disk this is the floor under
// BenchmarkAcquireRelease/disk.
func BenchmarkFsyncFloor(b *testing.B) {
	record := make([]byte, 240) // the size of a lockctl record
	for _, f := range benchFS {
		b.Run(f.name, func(b *testing.B) {
			dir := benchDir(b, f.parent)
			reg, err := os.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer reg.Close()
			tmp, final := filepath.Join(dir, "x.lock.new"), filepath.Join(dir, "x.lock")
			for b.Loop() {
				if err := os.Mkdir(tmp, 0o755); err != nil {
					b.Fatal(err)
				}
				rec, err := os.OpenFile(filepath.Join(tmp, "holder"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := rec.Write(record); err != nil {
					b.Fatal(err)
				}
				if err := rec.Sync(); err != nil {
					b.Fatal(err)
				}
				rec.Close()
				d, err := os.Open(tmp)
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Sync(); err != nil {
					b.Fatal(err)
				}
				d.Close()
				if err := os.Rename(tmp, final); err != nil {
					b.Fatal(err)
				}
				if err := reg.Sync(); err != nil {
					b.Fatal(err)
				}
				if err := os.Remove(filepath.Join(final, "holder")); err != nil {
					b.Fatal(err)
				}
				if err := os.Remove(final); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchContendFor is how long each round of BenchmarkContended runs;
// LOCKCTL_BENCH_CONTEND (a Go duration) overrides it.
func benchContendFor() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("LOCKCTL_BENCH_CONTEND")); err == nil && d > 0 {
		return d
	}
	return 3 * time.Second
}

// BenchmarkContended runs 4 processes (this test binary again, as
// TestBenchContendedWorker) that loop Acquire/Release on one lock for a fixed
// time, and reports their acquisitions per second in total. Each run of the
// benchmark function is one such round, whatever b.N is: use
// -benchtime=1x. ns/op is reported as wall time per acquisition, all
// processes together.
func BenchmarkContended(b *testing.B) {
	const workers = 4
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range benchFS {
		b.Run(f.name, func(b *testing.B) {
			dir := benchDir(b, f.parent)
			p := filepath.Join(dir, "x.lock")
			dur := benchContendFor()
			// Start every worker first, then let them all begin at once.
			begin := time.Now().Add(500 * time.Millisecond)
			end := begin.Add(dur)
			cmds := make([]*exec.Cmd, workers)
			outs := make([]*strings.Builder, workers)
			for i := range cmds {
				c := exec.Command(exe, "-test.run=^TestBenchContendedWorker$", "-test.count=1")
				c.Env = append(os.Environ(),
					benchRoleEnv+"=contend", benchLockEnv+"="+p,
					benchBeginEnv+"="+strconv.FormatInt(begin.UnixNano(), 10),
					benchEndEnv+"="+strconv.FormatInt(end.UnixNano(), 10))
				outs[i] = &strings.Builder{}
				c.Stdout, c.Stderr = outs[i], outs[i]
				if err := c.Start(); err != nil {
					b.Fatal(err)
				}
				cmds[i] = c
			}
			var counts []int
			var worst []time.Duration
			failed := false
			for i, c := range cmds {
				err := c.Wait()
				n, w, ok := benchParse(outs[i].String())
				if err != nil || !ok {
					b.Errorf("worker %d: %v\n%s", i, err, outs[i].String())
					failed = true
					continue
				}
				counts = append(counts, n)
				worst = append(worst, w)
			}
			if failed {
				b.FailNow()
			}
			total := 0
			for _, n := range counts {
				total += n
			}
			if total == 0 {
				b.Fatal("no worker acquired the lock")
			}
			b.ReportMetric(float64(total)/dur.Seconds(), "acq/s")
			b.ReportMetric(float64(dur.Nanoseconds())/float64(total), "ns/op")
			b.ReportMetric(float64(slices.Min(counts))/float64(slices.Max(counts)), "fairness(min/max)")
			b.ReportMetric(float64(slices.Max(worst).Microseconds())/1000, "max-wait-ms")
			if p50, p99, ok := benchHandoffs(b, p); ok {
				b.ReportMetric(float64(p50.Microseconds())/1000, "handoff-p50-ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "handoff-p99-ms")
			}
			b.Logf("%s: %d workers, %v: acquisitions per worker %v, longest wait per worker %v", f.name, workers, dur, counts, worst)
		})
	}
}

// benchHandoffs reads when each worker held the lock at p and returns the
// median and the 99th percentile of the handoffs: from one release to the
// next acquisition, by whichever worker, while others were waiting.
func benchHandoffs(b *testing.B, p string) (p50, p99 time.Duration, ok bool) {
	files, _ := filepath.Glob(p + ".holds.*")
	type hold struct{ from, to int64 }
	var holds []hold
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var h hold
			if _, err := fmt.Sscanf(line, "%d %d", &h.from, &h.to); err == nil {
				holds = append(holds, h)
			}
		}
		os.Remove(f)
	}
	slices.SortFunc(holds, func(a, b hold) int { return cmp.Compare(a.from, b.from) })
	var gaps []time.Duration
	for i := 1; i < len(holds); i++ {
		// Release returns after the lock is free: a next hold that began
		// before it returned is a handoff of about nothing.
		gaps = append(gaps, time.Duration(max(0, holds[i].from-holds[i-1].to)))
	}
	if len(gaps) < 100 {
		return 0, 0, false
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2], gaps[len(gaps)*99/100], true
}

func benchParse(out string) (n int, worst time.Duration, ok bool) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if rest, found := strings.CutPrefix(sc.Text(), benchResult+" "); found {
			var ns int64
			if _, err := fmt.Sscanf(rest, "%d %d", &n, &ns); err == nil {
				return n, time.Duration(ns), true
			}
		}
	}
	return 0, 0, false
}

// TestBenchContendedWorker is one worker process of BenchmarkContended. It
// skips unless the benchmark started it. It loops Acquire/Release on the
// lock until the end of its window, checks inside each hold that no other
// worker is inside too, and prints how many times it acquired the lock and
// its longest wait.
func TestBenchContendedWorker(t *testing.T) {
	if os.Getenv(benchRoleEnv) != "contend" {
		t.Skip("the worker process of BenchmarkContended (go test -bench Contended)")
	}
	p := os.Getenv(benchLockEnv)
	beginNs, err1 := strconv.ParseInt(os.Getenv(benchBeginEnv), 10, 64)
	endNs, err2 := strconv.ParseInt(os.Getenv(benchEndEnv), 10, 64)
	if p == "" || err1 != nil || err2 != nil {
		t.Fatalf("bad worker environment: %s=%q %v %v", benchLockEnv, p, err1, err2)
	}
	time.Sleep(time.Until(time.Unix(0, beginNs)))
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, endNs))
	defer cancel()
	inside := filepath.Join(filepath.Dir(p), benchInside)
	n := 0
	var worst time.Duration
	var holds strings.Builder
	for ctx.Err() == nil {
		t0 := time.Now()
		l, err := lock.Acquire(ctx, p, lock.Options{Kernel: judges.Kernel{}})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			t.Fatalf("Acquire: %v", err)
		}
		worst = max(worst, time.Since(t0))
		held := time.Now()
		f, err := os.OpenFile(inside, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, fs.ErrExist) {
			t.Fatalf("two holders at once: %s exists while this process holds the lock", inside)
		} else if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Remove(inside); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatalf("Release: %v", err)
		}
		fmt.Fprintf(&holds, "%d %d\n", held.UnixNano(), time.Now().UnixNano())
		n++
	}
	// When this worker held the lock: the benchmark measures the handoffs
	// between holds from them.
	if err := os.WriteFile(fmt.Sprintf("%s.holds.%d", p, os.Getpid()), []byte(holds.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s %d %d\n", benchResult, n, worst.Nanoseconds())
}

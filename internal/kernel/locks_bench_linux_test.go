package kernel

import (
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkProcLocksStall asks issue 19's question of /proc/locks: does
// reading it, which takes the kernel's file-lock rwsem for writing (its
// first read after a quiet spell costs the reader a few milliseconds, an
// RCU grace period), stall other processes' flock calls meanwhile? Each
// sub-benchmark times b.N flock+unlock pairs on a tmpfs file, with and
// without a reader that reads /proc/locks every 30 ms (each read then pays
// the grace period), and reports the read's own cost and the pairs' tail:
//
//	go test ./internal/kernel -run '^$' -bench BenchmarkProcLocksStall -benchtime 1000000x
func BenchmarkProcLocksStall(b *testing.B) {
	for _, reading := range []bool{false, true} {
		name := "quiet"
		if reading {
			name = "reader-every-30ms"
		}
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(shmOrTemp(b), "stall.lock"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var stop atomic.Bool
			reads := make(chan []time.Duration, 1)
			if reading {
				go func() {
					var ds []time.Duration
					for !stop.Load() {
						time.Sleep(30 * time.Millisecond)
						t := time.Now()
						readFile("/proc/locks")
						ds = append(ds, time.Since(t))
					}
					reads <- ds
				}()
			}
			lat := make([]time.Duration, b.N)
			fd := int(f.Fd())
			b.ResetTimer()
			for i := range lat {
				t := time.Now()
				unix.Flock(fd, unix.LOCK_EX)
				unix.Flock(fd, unix.LOCK_UN)
				lat[i] = time.Since(t)
			}
			b.StopTimer()
			stop.Store(true)
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			b.ReportMetric(ms(lat[len(lat)*999/1000]), "flock-p99.9-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "flock-max-ms")
			if reading {
				ds := <-reads
				if len(ds) > 0 {
					slices.Sort(ds)
					b.ReportMetric(ms(ds[len(ds)/2]), "read-p50-ms")
					b.ReportMetric(float64(len(ds)), "reads")
				}
			}
		})
	}
}

func shmOrTemp(b *testing.B) string {
	if d, err := os.MkdirTemp("/dev/shm", "lockctl-bench-"); err == nil {
		b.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return b.TempDir()
}

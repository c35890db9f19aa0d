package scan_test

// Benchmarks of the record parsers and of the walk (docs/performance.md).
// They run only under -bench; nothing here is a test.

import (
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/internal/dev/bench/tree"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Records as real writers leave them.
var (
	benchRecA   = []byte("token build-7.example.com.4213.1700000000.0123456789abcdef0123456789abcdef\npid 4213\ncommand make\nhost build-7.example.com\n")
	benchTokB   = "4213.0123456789abcdef0123456789abcdef.1"
	benchRecB   = []byte("token " + benchTokB + "\npid 4213\ncommand agmsg-send\nhost build-7\nscope 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\nbreak writers\n")
	benchRecLck = []byte(scan.LockctlMagic + "\ntoken 4213.0123456789abcdef0123456789abcdef.1\npid 4213\nstart 1234567\nboot 0b0e3c1f-6c44-4a56-9b1a-2f0d8d1c5e77\npidns pid:[4026531836]\nhost build-7\ncommand lockctl\nacquired 2026-01-02T03:04:05.123456789Z\nalso 4214 1234570\n")
)

func BenchmarkParseRegistryA(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scan.ParseRegistryA(benchRecA); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRegistryB(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scan.ParseRegistryB(benchRecB, benchTokB); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParsePidFile(b *testing.B) {
	for _, c := range []struct{ name, content string }{
		{"pid", "4213\n"},
		{"uucp", "      4213\n"},
		{"kv", "pid=4213\nhost=build-7\ncmd=make\n"},
		{"zero", "0\n"},
	} {
		content := []byte(c.content)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := scan.ParsePidFile(content); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParseLockctl(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scan.ParseLockctl(benchRecLck); err != nil {
			b.Fatal(err)
		}
	}
}

// benchWalkTree generates a tree of 10,000 entries holding 200 locks of
// every kind (tree.Kinds) under /tmp, the disk, and walks it once so that
// the benchmark reads it warm. The tree and its holder processes go away
// when the benchmark ends.
func benchWalkTree(b *testing.B) (scan.Root, scan.Matcher, tree.Counts) {
	b.Helper()
	procs, err := tree.StartProcs(4, 20)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(procs.Stop)
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	counts, err := tree.Build(dir, tree.Spec{Entries: 10_000, Locks: 200, Seed: 1, Host: kernel.LocalHost(), Procs: procs})
	if err != nil {
		b.Fatal(err)
	}
	m, err := scan.NewMatcher(nil)
	if err != nil {
		b.Fatal(err)
	}
	r, err := scan.ResolveRoot(dir, m)
	if err != nil {
		b.Fatal(err)
	}
	if n := benchWalkOnce(b, r, m, nil); n != counts.Locks {
		b.Fatalf("the walk found %d locks, want %d", n, counts.Locks)
	}
	return r, m, counts
}

// benchWalkOnce walks r and returns how many locks it found, handing each
// to judge when judge is not nil.
func benchWalkOnce(b *testing.B, r scan.Root, m scan.Matcher, judge func(*scan.Lock)) int {
	n := 0
	w := scan.Walker{
		Match: m,
		Found: func(l *scan.Lock) {
			n++
			if judge != nil {
				judge(l)
			}
		},
		Warn: func(err error) { b.Fatalf("walk warning: %v", err) },
	}
	if err := w.Walk(r); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkWalk walks a 10,000-entry tree with 200 locks: listing every
// directory and reading every lock's records, judging nothing.
func BenchmarkWalk(b *testing.B) {
	r, m, counts := benchWalkTree(b)
	b.ReportAllocs()
	for b.Loop() {
		benchWalkOnce(b, r, m, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(counts.Entries), "ns/entry")
}

// BenchmarkWalkJudge is what doctor does before it writes its report: the
// walk, and the judgement of every lock found with the real kernel probe
// behind a per-run cache (a fresh cache each walk, as each doctor run has).
func BenchmarkWalkJudge(b *testing.B) {
	r, m, counts := benchWalkTree(b)
	host := kernel.LocalHost()
	b.ReportAllocs()
	for b.Loop() {
		j := verdict.Judge{Host: host, Probe: &verdict.CachingProbe{Next: kernel.KernelProbe{}}}
		benchWalkOnce(b, r, m, func(l *scan.Lock) { _ = j.Judge(l) })
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(counts.Entries), "ns/entry")
}

// BenchmarkIsLock is the name test the walk makes of every entry, with the
// default patterns (*.lock, *.lck, LCK..*).
func BenchmarkIsLock(b *testing.B) {
	m, err := scan.NewMatcher(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"data0012345.json", "job00042.lock", "LCK..ttyS0", "a-rather-longer-file-name-of-a-build-output.tar.gz"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				_ = m.IsLock(name)
			}
		})
	}
}

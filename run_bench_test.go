//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkRun is issue 19's yardstick for the lock commands: one
// `lockctl run L -- true` against one `flock L true`, each a fresh process
// as a shell or a CI step starts it, on tmpfs (where the lock's fsyncs cost
// nothing and the start of the programs is all that is measured) and in the
// temporary directory. lockctl is built with a plain `go build`, as a user
// gets it. Beside them, on tmpfs, internal/bench/runfloor's two floors: a
// program that links what lockctl links and does no lock's work, starting
// CMD behind run's gate (floor-gate: run can be no faster) and directly
// (floor-direct: no run with lockctl's dependencies can be faster). Compare
// the sub-benchmarks' ns/op:
//
//	go test -run '^$' -bench BenchmarkRun -benchtime 200x -count 5 .
func BenchmarkRun(b *testing.B) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		b.Skip("flock(1) is not installed (util-linux)")
	}
	bin := filepath.Join(b.TempDir(), "lockctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	floor := filepath.Join(b.TempDir(), "runfloor")
	if out, err := exec.Command("go", "build", "-o", floor, "./internal/bench/runfloor").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	dirs := map[string]string{"tmpfs": "/dev/shm", "tmp": os.TempDir()}
	for _, where := range []string{"tmpfs", "tmp"} {
		dir, err := os.MkdirTemp(dirs[where], "lockctl-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		l := filepath.Join(dir, "x.lock")
		type bench struct {
			name string
			args []string
		}
		cases := []bench{
			{"flock", []string{flock, l + ".flock", "true"}},
			{"lockctl-run", []string{bin, "run", l, "--", "true"}},
			{"lockctl-run-kind-flock", []string{bin, "run", "--kind", "flock", l + ".k", "--", "true"}},
		}
		if where == "tmpfs" {
			cases = append(cases, bench{"floor-gate", []string{floor, "gate", "true"}}, bench{"floor-direct", []string{floor, "direct", "true"}})
		}
		for _, c := range cases {
			b.Run(where+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					if out, err := exec.Command(c.args[0], c.args[1:]...).CombinedOutput(); err != nil {
						b.Fatalf("%q: %v\n%s", c.args, err, out)
					}
				}
			})
		}
	}
}

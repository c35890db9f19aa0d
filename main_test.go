//go:build linux

package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil/scriptcmd"
)

var update = flag.Bool("u", false, "rewrite the golden files inside testdata/script/*.txtar from the actual output")

// TestMain makes the test binary double as the commands the scripts run:
// "lockctl" is the real CLI; "expect-exit" runs a command and checks its
// exact exit status, which testscript's "!" cannot (it only says "failed",
// and a Go panic also exits 2). The Go end-to-end tests are in
// internal/dev/e2e; the scripts' own commands in internal/dev/testutil/scriptcmd.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"lockctl":     func() { os.Exit(cli.Run(os.Args, os.Stdout, os.Stderr)) },
		"expect-exit": scriptcmd.ExpectExit,
	})
}

// TestScript runs every testdata/script/*.txtar end to end.
func TestScript(t *testing.T) {
	// testscript makes the scripts' work directories in a folder
	// $GOTMPDIR/go-test-script*, which it removes only once every script
	// of the directory has run: under -run, never. Make that folder in
	// this test's own temporary directory. testscript reads GOTMPDIR
	// before it starts the scripts (which run after this function
	// returns), so it is set back at once, and no script sees it.
	old, had := os.LookupEnv("GOTMPDIR")
	if err := os.Setenv("GOTMPDIR", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if had {
			os.Setenv("GOTMPDIR", old)
		} else {
			os.Unsetenv("GOTMPDIR")
		}
	}()
	testscript.Run(t, testscript.Params{
		Dir:                "testdata/script",
		UpdateScripts:      *update,
		RequireUniqueNames: true,
		Setup:              scriptcmd.Setup,
		Condition:          scriptcmd.Condition,
		Cmds:               scriptcmd.Cmds(),
	})
}

// lockctl is started once per critical section (`lockctl run`), so what it
// links costs every caller. Package os/user and package net link cgo,
// which makes the binary load the dynamic linker and libc at every start:
// about a millisecond here (docs/performance.md). lipgloss 1.1 brings
// os/user in through colorprofile and xo/terminfo, which is why go.mod
// keeps lipgloss at 1.0. A plain `go build`, cgo on, must stay static.
func TestBinaryLinksNoCgo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	// The e2e tests' lockctl is their own test binary (lcBinary): it
	// links no libc either, or the tests would run a lockctl unlike the
	// one shipped.
	for _, pkg := range [][]string{{"."}, {"-test", "./internal/dev/e2e"}} {
		cmd := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkg...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %v: %v", pkg, err)
		}
		for _, p := range strings.Fields(string(out)) {
			switch p {
			case "runtime/cgo", "os/user", "net":
				t.Errorf("%s links %s, which makes every start load libc; see docs/performance.md", pkg[len(pkg)-1], p)
			}
		}
	}
}

// BenchmarkRun is issue 19's yardstick for the lock commands: one
// `lockctl run L -- true` against one `flock L true`, each a fresh process
// as a shell or a CI step starts it, on tmpfs (where the lock's fsyncs cost
// nothing and the start of the programs is all that is measured) and in the
// temporary directory. lockctl is built with a plain `go build`, as a user
// gets it. Beside them, on tmpfs, internal/dev/bench/runfloor's two floors: a
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
	if out, err := exec.Command("go", "build", "-o", floor, "./internal/dev/bench/runfloor").CombinedOutput(); err != nil {
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

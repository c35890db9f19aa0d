//go:build linux

// Command mutants checks that every safety mechanism of lockctl has a test
// that notices when the mechanism is gone.
//
// Each file in internal/dev/mutants/patches is a patch that reverts one
// mechanism, with a header naming what it breaks and which tests must
// notice:
//
//	# mutant: eperm-dead
//	# what: EPERM from kill(pid, 0) is read as "no such process"
//	# packages: ./internal/kernel
//	# tests: TestKernelProbeEPERM
//	--- a/internal/kernel/probe_linux.go
//	+++ b/internal/kernel/probe_linux.go
//	...
//
// For each patch, mutants applies it to copies of the files it changes
// only, and runs the named tests in the module with those files overlaid
// (go test -overlay, through GOFLAGS, so that a go build a test runs is
// mutated too; the e2e tests' lockctl is their own test binary, mutated
// with it), so the build cache serves everything else (a
// patch that no longer applies is a failure, not a skip). It prints
// "killed NAME by TestX" or "SURVIVED NAME". The last line is "mutants: N
// killed, M survived"; the exit status is non-zero if anything survived or
// failed to apply.
//
// Each mutant's packages are tested one at a time, in the header's order,
// each stopping at its first failure (-failfast): the first failure kills
// the mutant, and the rest would only wait out timeouts the mutant causes.
// -j N tries N mutants at once, each in a go test of its own.
//
// Each mutant's go test runs in a process group of its own, marked with
// an id of its own (internal/dev/leak): at its time limit (-timeout) the
// whole group is killed, and every process still carrying its mark, so a
// test binary that a mutant made hang, and what it forked, are stopped
// too. A mutant that ran out of time is reported as TIMEOUT, a failure:
// a mutant must be killed by a test that says what broke, not by a hang.
//
// Run it from the module root: go run ./internal/dev/mutants [-run REGEXP] [-j N].
//
// To make a patch, break the mechanism in place, in files with no other
// uncommitted change, and save the change as a mutant; save also restores
// the files:
//
//	go run ./internal/dev/mutants -save NAME -what WHAT -packages ./verdict -tests 'TestX|TestY' FILE...
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/dev/leak"
)

type mutant struct {
	name     string
	what     string
	packages []string
	tests    string
	file     string
}

func main() {
	run := flag.String("run", "", "only the mutants whose name matches `REGEXP`")
	list := flag.Bool("list", false, "list the mutants and exit")
	timeout := flag.Duration("timeout", 5*time.Minute, "give each mutant's tests at most `D`")
	jobs := flag.Int("j", 1, "try `N` mutants at once")
	var m mutant
	flag.StringVar(&m.name, "save", "", "save the uncommitted change of the named files as mutant `NAME`, and restore them")
	flag.StringVar(&m.what, "what", "", "with -save: what the mutant breaks")
	pkgs := flag.String("packages", "", "with -save: the `packages` whose tests must notice, space-separated")
	flag.StringVar(&m.tests, "tests", "", "with -save: the tests (a -run `REGEXP`) that must notice")
	flag.Parse()
	if m.name != "" {
		m.packages = strings.Fields(*pkgs)
		os.Exit(save(m, flag.Args(), os.Stdout, os.Stderr))
	}
	os.Exit(mainErr(*run, *list, *jobs, *timeout, os.Stdout, os.Stderr))
}

// save writes the uncommitted change of files as the patch of mutant m,
// then reverses it, so the files are as committed again.
func save(m mutant, files []string, stdout, stderr io.Writer) int {
	if m.what == "" || len(m.packages) == 0 || m.tests == "" || len(files) == 0 {
		fmt.Fprintln(stderr, "mutants: -save needs -what, -packages, -tests and the files that were changed")
		return 2
	}
	if strings.ContainsAny(m.name, "/\\ ") {
		fmt.Fprintf(stderr, "mutants: %q is not a mutant name\n", m.name)
		return 2
	}
	diff, err := exec.Command("git", append([]string{"diff", "--no-color", "--no-ext-diff", "--"}, files...)...).Output()
	if err != nil {
		fmt.Fprintf(stderr, "mutants: git diff: %v\n", err)
		return 2
	}
	if len(diff) == 0 {
		fmt.Fprintf(stderr, "mutants: %s has no uncommitted change: break the mechanism there first\n", strings.Join(files, " "))
		return 2
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# mutant: %s\n# what: %s\n# packages: %s\n# tests: %s\n", m.name, m.what, strings.Join(m.packages, " "), m.tests)
	b.Write(diff)
	path := filepath.Join("internal/dev/mutants/patches", m.name+".patch")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "mutants: %v (run me from the module root)\n", err)
		return 2
	}
	undo := exec.Command("git", "apply", "-R", "-")
	undo.Stdin = bytes.NewReader(diff)
	if out, err := undo.CombinedOutput(); err != nil {
		fmt.Fprintf(stderr, "mutants: saved %s, but cannot restore %s: %s\n", path, strings.Join(files, " "), out)
		return 1
	}
	fmt.Fprintf(stdout, "saved %s; %s restored\n", path, strings.Join(files, " "))
	return 0
}

func mainErr(run string, list bool, jobs int, timeout time.Duration, stdout, stderr io.Writer) int {
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "mutants: %v\n", err)
		return 2
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		fmt.Fprintf(stderr, "mutants: run me from the module root (no go.mod in %s)\n", root)
		return 2
	}
	ms, err := load(filepath.Join(root, "internal/dev/mutants/patches"))
	if err != nil {
		fmt.Fprintf(stderr, "mutants: %v\n", err)
		return 2
	}
	var re *regexp.Regexp
	if run != "" {
		if re, err = regexp.Compile(run); err != nil {
			fmt.Fprintf(stderr, "mutants: -run: %v\n", err)
			return 2
		}
	}
	var todo []mutant
	for _, m := range ms {
		if re != nil && !re.MatchString(m.name) {
			continue
		}
		if list {
			fmt.Fprintf(stdout, "%-32s %s\n", m.name, m.what)
			continue
		}
		todo = append(todo, m)
	}
	killed, survived, broken, timedOut := 0, 0, 0, 0
	for r := range tryAll(root, todo, jobs, timeout) {
		m := r.m
		switch {
		case errors.Is(r.err, errTimeout):
			timedOut++
			fmt.Fprintf(stdout, "TIMEOUT %s (%s): %v (%.1fs)\n", m.name, m.what, r.err, r.took.Seconds())
		case r.err != nil:
			broken++
			fmt.Fprintf(stdout, "BROKEN %s: %v\n", m.name, r.err)
		case r.by == "":
			survived++
			fmt.Fprintf(stdout, "SURVIVED %s (%s): no test in %s noticed\n", m.name, m.what, strings.Join(m.packages, " "))
		default:
			killed++
			fmt.Fprintf(stdout, "killed %s by %s (%.1fs)\n", m.name, r.by, r.took.Seconds())
		}
	}
	if list {
		return 0
	}
	if broken > 0 {
		fmt.Fprintf(stdout, "mutants: %d patches do not apply or could not be tested\n", broken)
	}
	if timedOut > 0 {
		fmt.Fprintf(stdout, "mutants: %d ran out of time (a hang is not a kill: make a test notice it sooner)\n", timedOut)
	}
	fmt.Fprintf(stdout, "mutants: %d killed, %d survived\n", killed, survived)
	if survived > 0 || broken > 0 || timedOut > 0 {
		return 1
	}
	return 0
}

// result is what trying one mutant found.
type result struct {
	m    mutant
	by   string
	err  error
	took time.Duration
}

// tryAll tries the mutants, jobs at a time, and yields their results in
// the mutants' order. Each mutant's tests run in a go test of their own,
// with their own overlay, so two never see each other's patch.
func tryAll(root string, ms []mutant, jobs int, timeout time.Duration) <-chan result {
	out := make(chan result)
	done := make([]chan result, len(ms))
	for i := range done {
		done[i] = make(chan result, 1)
	}
	sem := make(chan struct{}, max(jobs, 1))
	go func() {
		for i, m := range ms {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				start := time.Now()
				by, err := try(root, m, timeout)
				done[i] <- result{m, by, err, time.Since(start)}
			}()
		}
	}()
	go func() {
		defer close(out)
		for _, d := range done {
			out <- <-d
		}
	}()
	return out
}

// load reads the patches and their headers.
func load(dir string) ([]mutant, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ms []mutant
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".patch") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		m := mutant{file: p}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "# ") {
				break
			}
			k, v, _ := strings.Cut(strings.TrimPrefix(line, "# "), ": ")
			switch k {
			case "mutant":
				m.name = v
			case "what":
				m.what = v
			case "packages":
				m.packages = strings.Fields(v)
			case "tests":
				m.tests = v
			}
		}
		if m.name == "" || len(m.packages) == 0 || m.tests == "" {
			return nil, fmt.Errorf("%s: the header must name the mutant, its packages and its tests", p)
		}
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	return ms, nil
}

// try applies m to the files it changes, in a directory of their own, and
// runs its tests in the module itself with those files overlaid (go
// test -overlay, passed through GOFLAGS so that a go build a test runs
// builds the mutated files too). Nothing else is copied, so
// the build cache serves every package the patch does not touch. It
// returns the first test that failed, or "" if all passed.
func try(root string, m mutant, timeout time.Duration) (string, error) {
	tmp, err := os.MkdirTemp("", "lockctl-mutant-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	files, err := patchedFiles(m.file)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the patch makes it
		}
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(filepath.Join(tmp, "src", filepath.Dir(f)), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(tmp, "src", f), b, 0o644); err != nil {
			return "", err
		}
	}
	apply := exec.Command("git", "apply", "--whitespace=nowarn", m.file)
	apply.Dir = filepath.Join(tmp, "src")
	if err := os.MkdirAll(apply.Dir, 0o755); err != nil {
		return "", err
	}
	if out, err := apply.CombinedOutput(); err != nil {
		return "", fmt.Errorf("the patch does not apply: %s", strings.TrimSpace(string(out)))
	}
	overlay := struct{ Replace map[string]string }{map[string]string{}}
	for _, f := range files {
		mutated := filepath.Join(tmp, "src", f)
		if _, err := os.Stat(mutated); err != nil {
			mutated = "" // the patch deletes it
		}
		overlay.Replace[filepath.Join(root, f)] = mutated
	}
	ov := filepath.Join(tmp, "overlay.json")
	b, _ := json.Marshal(overlay)
	if err := os.WriteFile(ov, b, 0o644); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	mark := fmt.Sprintf("mutant-%d-%s", os.Getpid(), m.name)
	defer leak.Kill(mark)
	// One package at a time, in the header's order, each stopping at its
	// first failing test (-failfast): a mutant is killed by the first
	// failure, and the tests after it, which a mutant often makes wait
	// out a timeout, would only spend time. No vet (-vet=off): CI vets
	// the code as it is, and vetting each mutant's packages again was
	// much of the runner's time.
	for _, pkg := range m.packages {
		cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-vet=off", "-failfast", "-run", m.tests, pkg)
		cmd.Dir = root
		// -ldflags=-w: no DWARF in the test binaries (the e2e tests' one is
		// also their lockctl), linked anew for every mutant (a tenth of a
		// mutant's time).
		cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -ldflags=-w -overlay="+ov), leak.Var+"="+mark)
		// At the limit, go and the test binary it runs (one process
		// group), and whatever the tests started in groups of their own
		// (the mark), are killed; WaitDelay stops the wait for a pipe
		// that a survivor still holds.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error {
			err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			leak.Kill(mark)
			return err
		}
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w: its tests in %s did not finish within %s", errTimeout, pkg, timeout)
		}
		if err == nil {
			continue
		}
		if bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")) {
			return "", fmt.Errorf("the mutated module does not build:\n%s", out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if t, ok := strings.CutPrefix(strings.TrimSpace(line), "--- FAIL: "); ok {
				return strings.Fields(t)[0], nil
			}
		}
		return "go test " + pkg + " (exit status " + fmt.Sprint(cmd.ProcessState.ExitCode()) + ")", nil
	}
	return "", nil
}

// errTimeout is a mutant whose tests ran out of time.
var errTimeout = errors.New("timed out")

// patchedFiles lists the files a patch changes, makes or deletes, relative
// to the module root.
func patchedFiles(patch string) ([]string, error) {
	b, err := os.ReadFile(patch)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var files []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, prefix := range []string{"--- a/", "+++ b/"} {
			if f, ok := strings.CutPrefix(line, prefix); ok && !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s changes no file", patch)
	}
	return files, nil
}

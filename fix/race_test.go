//go:build linux

package fix_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// The racing test re-runs this test binary as sweeper processes, as
// doctor --fix runs would: TestHelperSweeper is the child's role.
const (
	envSweeper    = "FIX_SWEEPER"
	envRegistry   = "FIX_REGISTRY"
	envJudgeFirst = "FIX_JUDGE_FIRST"
	envReverse    = "FIX_REVERSE"
	sweepers      = 4
)

// TestRacingFixers guards step 1, claim, across processes: four sweepers
// over one registry of 60 gone locks (generation A, generation B and pid
// files) and a crowd of live, owner-less and foreign ones remove each gone
// lock exactly once between them, leave no claim behind and touch nothing
// else. Two sweepers judge the whole registry before any of them acts (so
// they race on one stale judgement), two judge while the others sweep (so
// they read a registry mid-sweep); two go through the locks forwards, two
// backwards; a start barrier makes them overlap.
func TestRacingFixers(t *testing.T) {
	host := testHost(t)
	reg := tempDir(t)
	gone := []int{testutil.Gone(t), testutil.Gone(t), testutil.Gone(t)}
	live := []int{testutil.Sleeper(t).Process.Pid, testutil.Sleeper(t).Process.Pid}

	goneLocks := map[string]bool{}
	for i := range 60 {
		sub := filepath.Join(reg, fmt.Sprintf("team%d", i%4))
		testutil.Mkdir(t, sub)
		pid := gone[i%len(gone)]
		var lock string
		switch i % 3 {
		case 0:
			lock = mkGenA(t, sub, fmt.Sprintf("a%02d.lock", i), testutil.RecA(pid, host.Name))
		case 1:
			tok := testutil.TokenB(pid, i)
			lock = mkGenB(t, sub, fmt.Sprintf("b%02d.lock", i), tok, testutil.RecB(tok, pid, host.Name, host.Scope))
		default:
			lock = mkFile(t, sub, fmt.Sprintf("p%02d.lock", i), fileRec(pid))
		}
		goneLocks[lock] = true
	}
	keep := filepath.Join(reg, "team0")
	for i, pid := range live {
		mkGenA(t, keep, fmt.Sprintf("live-a%d.lock", i), testutil.RecA(pid, host.Name))
		tok := testutil.TokenB(pid, 100+i)
		mkGenB(t, keep, fmt.Sprintf("live-b%d.lock", i), tok, testutil.RecB(tok, pid, host.Name, host.Scope))
		mkFile(t, keep, fmt.Sprintf("live-p%d.lock", i), testutil.PidRec(pid))
	}
	// Bare pid files of gone holders are never claimed (scan.InPlace):
	// gone, and kept.
	bare := map[string]bool{}
	for i, pid := range gone {
		bare[mkFile(t, keep, fmt.Sprintf("bare-p%d.lock", i), testutil.PidRec(pid))] = true
		bare[mkFile(t, keep, fmt.Sprintf("LCK..tty%d", i), uucpRec(pid))] = true
	}
	mkGenA(t, keep, "ownerless-dir.lock", nil)
	mkFile(t, keep, "ownerless.lock", []byte("0\n"))
	mkGenA(t, keep, "foreign.lock", testutil.RecA(gone[0], "elsewhere"))

	judgedGone := 0
	for p, res := range judgeAll(t, reg) {
		if (res.Verdict == verdict.Gone) != (goneLocks[p] || bare[p]) {
			t.Fatalf("fixture: Judge(%s) = %s (%s)", p, res.Verdict, res.Reason)
		}
		if goneLocks[p] {
			judgedGone++
		}
	}
	if judgedGone != len(goneLocks) {
		t.Fatalf("fixture: %d locks judged gone, want %d", judgedGone, len(goneLocks))
	}
	before := testutil.Snapshot(t, reg)

	cmds := make([]*exec.Cmd, sweepers)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestHelperSweeper$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), envSweeper+"=1", envRegistry+"="+reg, fmt.Sprintf("%s=%d", envJudgeFirst, i%2), fmt.Sprintf("%s=%d", envReverse, i/2))
	}
	// Each child says "ready" once it has judged (or, judging after the
	// barrier, at once); then all are released together.
	children := testutil.StartTogether(t, cmds...)
	testutil.Release(t, 60*time.Second, children)
	for i, c := range children {
		if err := c.Cmd.Wait(); err != nil {
			t.Fatalf("sweeper %d: %v; stderr:\n%s", i, err, c.Stderr.String())
		}
	}

	// Tally "PATH ACTION<tab>REASON" lines across all sweepers.
	removed := map[string]int{}
	for i, c := range children {
		n := 0
		for _, line := range strings.Split(strings.TrimSuffix(string(c.Out), "\n"), "\n") {
			head, reason, _ := strings.Cut(line, "\t")
			p, action, ok := cutLast(head)
			if !ok {
				continue // the test framework's own PASS line
			}
			switch {
			case action == string(fix.Skipped):
			case goneLocks[p] && action == string(fix.Removed):
				removed[p]++
				n++
			default:
				t.Errorf("sweeper %d: %s %s (%s), want skipped (or, for a gone lock, removed)", i, p, action, reason)
			}
		}
		t.Logf("sweeper %d removed %d locks", i, n)
	}
	for p := range goneLocks {
		if removed[p] != 1 {
			t.Errorf("%s was removed %d times across %d sweepers, want exactly once", p, removed[p], sweepers)
		}
	}
	if t.Failed() {
		for i, c := range children {
			t.Logf("sweeper %d:\n%s", i, c.Stderr.String())
		}
	}

	// Everything but the gone locks is exactly as it was; nothing new.
	want := map[string]testutil.Entry{}
	for p, e := range before {
		abs := filepath.Join(reg, p)
		if !goneLocks[abs] && !goneLocks[filepath.Dir(abs)] && !goneLocks[strings.TrimSuffix(abs, ".holder")] {
			want[p] = e
		}
	}
	for _, d := range testutil.Diff(want, testutil.Snapshot(t, reg)) {
		t.Errorf("%s: %s", reg, d)
	}
	noDebris(t, reg)
}

// cutLast splits "PATH ACTION" at its last space.
func cutLast(line string) (path, action string, ok bool) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 || !filepath.IsAbs(line[:i]) {
		return "", "", false
	}
	return line[:i], line[i+1:], true
}

// TestHelperSweeper is one sweeper process of TestRacingFixers, not a test
// of its own: it walks the registry, judges every lock and fixes each, as
// doctor --fix does, printing "PATH ACTION<tab>REASON" on stdout for every
// outcome.
func TestHelperSweeper(t *testing.T) {
	if os.Getenv(envSweeper) != "1" {
		t.Skip("a helper process of TestRacingFixers")
	}
	reg := os.Getenv(envRegistry)
	host := kernel.LocalHost()
	m := must(scan.NewMatcher(nil))
	judge := verdict.Judge{Host: host, Probe: &verdict.CachingProbe{Next: kernel.KernelProbe{}}}
	var results []verdict.Result
	walk := func() {
		r := must(scan.ResolveRoot(reg, m))
		seen := map[string]bool{}
		w := scan.Walker{
			Match: m,
			Found: func(l *scan.Lock) {
				if !seen[l.Path] {
					seen[l.Path] = true
					results = append(results, judge.Judge(l))
				}
			},
			Warn: func(err error) { fmt.Fprintf(os.Stderr, "warning: %v\n", err) },
		}
		if err := w.Walk(r); err != nil {
			t.Fatal(err)
		}
	}
	first := os.Getenv(envJudgeFirst) == "1"
	if first {
		walk()
	}
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil { // the start barrier
		t.Fatal(err)
	}
	if !first {
		walk()
	}
	// Half the sweepers go forwards and half backwards, so that they meet
	// both head-on and in each other's wake.
	reverse := os.Getenv(envReverse) == "1"
	sort.Slice(results, func(i, j int) bool { return (results[i].Lock.Path < results[j].Lock.Path) != reverse })
	fixer := fix.New(judges.Sweep(host))
	for _, res := range results {
		o := fixer.Fix(res)
		fmt.Printf("%s %s\t%s\n", res.Lock.Path, o.Action, o.Reason)
		fmt.Fprintf(os.Stderr, "%d: %s %s %s: %s\n", os.Getpid(), res.Lock.Path, res.Verdict, o.Action, o.Reason)
	}
}

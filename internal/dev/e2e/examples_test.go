//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// The examples in docs/examples are checked here with the tools that can
// check them, each skipped where its tool is not installed: promtool for
// the alert rules (and their unit tests), systemd-analyze for the units,
// and sh for the CI step. lockctl itself is this test binary, which
// testscript.Main has put on $PATH under that name.

const examples = "../../../docs/examples"

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	return p
}

// lockctlBin is the lockctl binary, put first on $PATH for the rest of the
// test, where the examples run it by name.
func lockctlBin(t *testing.T) string {
	t.Helper()
	bin := lcBinary(t)
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return bin
}

// registry makes a registry with one gone lock and one live one, and
// returns it.
func registry(t *testing.T) string {
	t.Helper()
	reg := filepath.Join(t.TempDir(), "reg")
	if err := os.Mkdir(reg, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, pid := range map[string]int{"stale.lock": testutil.Gone(t), "held.lock": testutil.Sleeper(t).Process.Pid} {
		if err := os.WriteFile(filepath.Join(reg, name), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestExampleAlertRules(t *testing.T) {
	promtool := needTool(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", "lockctl-alerts.yml"},
		{"test", "rules", "lockctl-alerts.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = examples
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestExampleSystemdUnits verifies the service and timer with
// systemd-analyze, which exits 0 even on a directive it ignores, so any
// output at all fails the test. The service's ExecStart is pointed at this
// lockctl, and man:lockctl(1) at docs/lockctl.1, because verify checks
// both exist. Then the ExecStart command line itself is run (into a
// temporary file) and its output checked with promtool.
func TestExampleSystemdUnits(t *testing.T) {
	analyze := needTool(t, "systemd-analyze")
	bin := lockctlBin(t)
	dir := t.TempDir()
	const installed = "/usr/local/bin/lockctl"
	unit, err := os.ReadFile(filepath.Join(examples, "lockctl-textfile.service"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ExecStart=` + regexp.QuoteMeta(installed) + ` (.*)$`).FindSubmatch(unit)
	if m == nil {
		t.Fatalf("lockctl-textfile.service has no ExecStart=%s line", installed)
	}
	unit = bytes.ReplaceAll(unit, []byte(installed), []byte(bin))
	if err := os.WriteFile(filepath.Join(dir, "lockctl-textfile.service"), unit, 0o644); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(examples, "lockctl-textfile.timer"), filepath.Join(dir, "lockctl-textfile.timer"), 0o644)
	man1 := filepath.Join(dir, "man", "man1")
	if err := os.MkdirAll(man1, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, "../../../docs/lockctl.1", filepath.Join(man1, "lockctl.1"), 0o644)

	cmd := exec.Command(analyze, "verify", "lockctl-textfile.service", "lockctl-textfile.timer")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MANPATH="+filepath.Join(dir, "man"), "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	// The command line: doctor --format prom --output FILE.
	args := strings.Fields(string(m[1]))
	if len(args) < 2 || args[len(args)-2] != "--output" || !strings.HasSuffix(args[len(args)-1], ".prom") {
		t.Fatalf("ExecStart arguments %q do not end in --output FILE.prom", args)
	}
	prom := filepath.Join(dir, "lockctl.prom")
	args[len(args)-1] = prom
	run := exec.Command(bin, args...)
	run.Env = append(os.Environ(), "LOCKCTL_PATH="+registry(t))
	if out, err := run.CombinedOutput(); err != nil {
		// 1 is in SuccessExitStatus: a gone lock needs attention.
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != cli.ExitAttention || len(out) > 0 {
			t.Fatalf("lockctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`lockctl_locks{verdict="gone"} 1`+"\n")) {
		t.Errorf("the unit's report lacks the gone lock:\n%s", b)
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		check := exec.Command(promtool, "check", "metrics")
		check.Stdin = bytes.NewReader(b)
		if out, err := check.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("promtool check metrics on the unit's report: %v\n%s", err, out)
		}
	}
}

// TestExampleCIStep runs docs/examples/ci-lockctl.sh: it fails (1) on a
// gone lock, passes (0) on a live one, fails (2) when it cannot run, and
// leaves the JSON report in each case it could run; shellcheck, where
// installed, finds nothing to say about it.
func TestExampleCIStep(t *testing.T) {
	lockctlBin(t)
	script, err := filepath.Abs(filepath.Join(examples, "ci-lockctl.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		if out, err := exec.Command(sc, script).CombinedOutput(); err != nil {
			t.Errorf("shellcheck ci-lockctl.sh: %v\n%s", err, out)
		}
	}
	reg := registry(t)
	tests := []struct {
		name     string
		path     string
		want     int
		wantGone int // -1: no report
	}{
		{"gone lock", reg, 1, 1},
		{"live lock only", filepath.Join(reg, "held.lock"), 0, 0},
		{"no such path", filepath.Join(reg, "none"), 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("sh", script, tt.path)
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if got := cmd.ProcessState.ExitCode(); got != tt.want {
				t.Fatalf("ci-lockctl.sh exited %d (%v), want %d\nstderr:\n%s", got, err, tt.want, stderr.String())
			}
			b, err := os.ReadFile(filepath.Join(dir, "lockctl.json"))
			if err != nil {
				t.Fatalf("no report left: %v", err)
			}
			var doc struct {
				Counts map[string]int `json:"counts"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("the report is not JSON: %v", err)
			}
			if doc.Counts["gone"] != tt.wantGone {
				t.Errorf("report counts.gone = %d, want %d", doc.Counts["gone"], tt.wantGone)
			}
			if tt.want == 1 && !strings.Contains(stderr.String(), "stale.lock") {
				if _, err := exec.LookPath("jq"); err == nil {
					t.Errorf("stderr does not name the gone lock:\n%s", stderr.String())
				}
			}
		})
	}
}

// TestExampleGitHubActions runs the workflow's lockctl step as its shell
// would, with its LOCKCTL_PATH pointed at a registry with a gone lock: the
// step fails and the report the next step uploads is there.
func TestExampleGitHubActions(t *testing.T) {
	lockctlBin(t)
	y, err := os.ReadFile(filepath.Join(examples, "github-actions.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s+run: (lockctl doctor .*)$`).FindSubmatch(y)
	if m == nil {
		t.Fatal("github-actions.yml has no 'run: lockctl doctor ...' step")
	}
	if !regexp.MustCompile(`(?m)^\s+path: lockctl\.json$`).Match(y) || !bytes.Contains(y, []byte("if: always()")) {
		t.Error("github-actions.yml does not upload lockctl.json whatever the step's outcome")
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "-e", "-c", string(m[1]))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LOCKCTL_PATH="+registry(t))
	out, _ := cmd.CombinedOutput()
	if got := cmd.ProcessState.ExitCode(); got != cli.ExitAttention {
		t.Errorf("the step exited %d, want %d (a gone lock)\n%s", got, cli.ExitAttention, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "lockctl.json")); err != nil {
		t.Errorf("the step left no report: %v", err)
	}
}

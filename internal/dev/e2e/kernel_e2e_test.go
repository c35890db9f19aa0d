//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// The done-when of issue 7 for --legacy-older-than, end to end through the
// CLI: `lockctl doctor --fix --legacy-older-than 1h` over a registry with
// unheld three-hour-old owner-less locks (removed), young ones (kept) and
// flock-held old ones (kept, live, named). The holders are this test binary
// re-run as TestHolderProcess. (testdata/script/issue7_*.txtar cover the
// text report; this test checks the removals, which those scripts cannot
// retry when the kernel evidence comes out partial, see below.)

// TestHolderProcess is not a test: it is the holder process that
// TestDoctorLegacySweep starts.
func TestHolderProcess(t *testing.T) { testutil.HolderProcess(t) }

type e2eLock struct {
	Path         string `json:"path"`
	Verdict      string `json:"verdict"`
	Reason       string `json:"reason"`
	Action       string `json:"action"`
	ActionReason string `json:"action_reason"`
}

// partialEvidence is what an outcome says when the kernel evidence, as
// root, came out incomplete. It used to, whenever a process exited while its
// fds were being read; now that must never happen.
func partialEvidence(l e2eLock) bool {
	return strings.Contains(l.ActionReason, "judged again, it is ownerless") ||
		strings.Contains(l.ActionReason, "not every process's open files could be seen")
}

func TestDoctorLegacySweep(t *testing.T) {
	if os.Geteuid() != 0 || len(testutil.HiddenFromRoot()) > 0 {
		t.Skipf("needs root, and every process's open files readable by root (hidden here: %v): the legacy sweep acts only on a complete look", testutil.HiddenFromRoot())
	}
	reg, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := func(name string) string { return filepath.Join(reg, name) }
	for _, d := range []string{"old.lock", "young.lock", "helddir.lock"} {
		if err := os.Mkdir(at(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{"oldempty.lock": "", "oldzero.lock": "0", "held.lock": "", "youngzero.lock": "0"} {
		if err := os.WriteFile(at(name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	heldPid := testutil.StartHolder(t, "flock", at("held.lock")).Pid
	heldDirPid := testutil.StartHolder(t, "flock", at("helddir.lock")).Pid
	old := time.Now().Add(-3 * time.Hour)
	for _, n := range []string{"old.lock", "oldempty.lock", "oldzero.lock", "held.lock", "helddir.lock"} {
		if err := os.Chtimes(at(n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	removed := map[string]bool{"old.lock": true, "oldempty.lock": true, "oldzero.lock": true}
	kept := map[string]string{ // name → what its outcome must say
		"young.lock":     "skipped: owner-less, but it changed",
		"youngzero.lock": "skipped: owner-less, but it changed",
		"held.lock":      "skipped: --fix removes only gone locks and abandoned claims; this one is live",
		"helddir.lock":   "skipped: --fix removes only gone locks and abandoned claims; this one is live",
	}
	holders := map[string]int{"held.lock": heldPid, "helddir.lock": heldDirPid}

	// --fix alone never sweeps an owner-less lock.
	var stdout, stderr bytes.Buffer
	if code := cli.Run([]string{"lockctl", "doctor", "--fix", "--json", reg}, &stdout, &stderr); code != cli.ExitAttention {
		t.Fatalf("doctor --fix exited %d, want %d; stderr:\n%s", code, cli.ExitAttention, stderr.String())
	}
	for name := range removed {
		if _, err := os.Lstat(at(name)); err != nil {
			t.Errorf("doctor --fix alone removed the owner-less %s", name)
		}
	}

	swept := map[string]bool{}
	for attempt := 1; ; attempt++ {
		stdout.Reset()
		stderr.Reset()
		code := cli.Run([]string{"lockctl", "doctor", "--fix", "--legacy-older-than", "1h", "--json", reg}, &stdout, &stderr)
		var doc struct {
			Locks []e2eLock `json:"locks"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, stdout.String())
		}
		if code != cli.ExitAttention {
			t.Errorf("doctor --fix --legacy-older-than 1h exited %d, want %d (the young locks are still owner-less)", code, cli.ExitAttention)
		}
		got := map[string]e2eLock{}
		partial := false
		for _, l := range doc.Locks {
			got[filepath.Base(l.Path)] = l
			partial = partial || partialEvidence(l)
		}
		// Whatever the evidence: held and young locks are never removed,
		// and the held ones name their holder.
		for name := range kept {
			if _, err := os.Lstat(at(name)); err != nil {
				t.Fatalf("attempt %d removed %s: %v", attempt, name, err)
			}
		}
		for name, pid := range holders {
			l := got[name]
			want := fmt.Sprintf("flock held by pid %d (lockctl.test)", pid)
			if l.Verdict != "live" || !strings.HasSuffix(l.Reason, want) {
				t.Errorf("%s = %s (%s), want live, %q", name, l.Verdict, l.Reason, want)
			}
		}
		for name := range removed {
			if l, ok := got[name]; ok && l.Action == "removed" {
				swept[name] = true
			}
		}
		if partial {
			// As root, with every process visible, evidence is complete:
			// a process exiting mid-scan must not make it partial.
			t.Fatalf("attempt %d: the kernel evidence came out partial as root", attempt)
		}
		if partial && attempt < 10 {
			t.Logf("attempt %d: the kernel evidence came out partial; again", attempt)
			continue
		}
		for name := range removed {
			if _, err := os.Lstat(at(name)); err == nil {
				t.Errorf("%s is still there: %+v", name, got[name])
			}
			if !swept[name] {
				t.Errorf("%s was never reported removed", name)
			}
		}
		for name, want := range kept {
			if l := got[name]; !strings.HasPrefix(l.Action+": "+l.ActionReason, want) {
				t.Errorf("%s: action %s (%s), want %q", name, l.Action, l.ActionReason, want)
			}
		}
		ents, err := os.ReadDir(reg)
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, e := range ents {
			left = append(left, e.Name())
		}
		if strings.Join(left, " ") != "held.lock helddir.lock young.lock youngzero.lock" {
			t.Errorf("the registry holds %q after the sweep, want the held and the young locks only", left)
		}
		return
	}
}

//go:build linux

package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// TestContainerThreadPidFile: a bare pid file holding the id, inside a
// container, of a live thread (not its process's leader), a number no
// host process or thread has, is held from the host, where doctor --fix
// keeps it, and live inside the container (issue 28, case 3).
func TestContainerThreadPidFile(t *testing.T) {
	needNamespaces(t, "a pid namespace needs root")
	_, bin := publicBin(t)
	ct := testutil.StartContainerThread(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "thread.lock")
	testutil.WriteFile(t, l, testutil.PidRec(ct.Inner))
	before := testutil.Snapshot(t, dir)

	type doc struct {
		Locks []struct{ Path, Verdict, Reason, Action string }
	}
	judge := func(what string, c *exec.Cmd) (verdict, reason, action string) {
		t.Helper()
		out, _ := runAs(t, c)
		var d doc
		if err := json.Unmarshal(out, &d); err != nil || len(d.Locks) != 1 {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		return d.Locks[0].Verdict, d.Locks[0].Reason, d.Locks[0].Action
	}

	if v, why, _ := judge("doctor from the host", exec.Command(bin, "doctor", "--json", dir)); v != "unknown" || !strings.Contains(why, "thread "+strconv.Itoa(ct.Tid)) {
		t.Errorf("doctor from the host: %s (%s), want unknown naming thread %d", v, why, ct.Tid)
	}
	if v, why, act := judge("doctor --fix from the host", exec.Command(bin, "doctor", "--fix", "--json", dir)); v != "unknown" || act == "removed" {
		t.Errorf("doctor --fix from the host: %s (%s), %s; want unknown, kept", v, why, act)
	}
	testutil.Untouched(t, dir, before)

	// Inside the container the same number is that live thread.
	inside := exec.Command("nsenter", "-t", strconv.Itoa(ct.Process.Pid), "-p", "-m", bin, "doctor", "--json", dir)
	if v, why, _ := judge("doctor inside the container", inside); v != "live" {
		t.Errorf("doctor inside the container: %s (%s), want live", v, why)
	}
	testutil.Untouched(t, dir, before)
}

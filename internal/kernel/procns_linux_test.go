//go:build linux

package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/verdict"
)

// probeSelfEnv makes the test binary print what KernelProbe and
// KernelEvidence say of its own process, as JSON, instead of running tests.
const probeSelfEnv = "LOCKCTL_TEST_PROBE_SELF"

func TestMain(m *testing.M) {
	if os.Getenv(probeSelfEnv) != "" {
		p := KernelProbe{}.Probe(os.Getpid())
		k := &KernelEvidence{}
		_, complete := k.Holders(1, 1)
		_, others := k.Unseen()
		_, nsErr := KernelProbe{}.NamespaceInUse("pid:[1]")
		_, namesakesErr := KernelProbe{}.Namesakes()
		json.NewEncoder(os.Stdout).Encode(map[string]any{
			"pid": os.Getpid(), "state": p.State, "has_start": p.HasStart, "start": p.Start, "comm": p.Comm,
			"complete": complete, "others": others, "err": fmt.Sprint(p.Err),
			"ns_err": errString(nsErr), "namesakes_err": errString(namesakesErr),
		})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// probeSelfUnder runs this test binary as `unshare ARGS` (the binary's path
// in place of "{}") in the probeSelfEnv mode, and returns what it printed.
// It skips the test where unshare cannot run.
func probeSelfUnder(t *testing.T, args ...string) []byte {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("unshare needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if a == "{}" {
			args[i] = self
		}
	}
	cmd := exec.Command(unshare, args...)
	cmd.Env = append(os.Environ(), probeSelfEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("unshare %v: %v (not permitted here?)", args, err)
	}
	return out
}

// TestProbeForeignProc: in a new pid namespace whose /proc is still the
// old one's, this process is pid 1 there, and /proc/1 is someone else. The
// probe must not take that stranger's state and start time for its own,
// and the kernel evidence must not count as complete.
func TestProbeForeignProc(t *testing.T) {
	out := probeSelfUnder(t, "--pid", "--fork", "--kill-child", "{}")
	var got struct {
		Pid      int
		State    verdict.State
		HasStart bool `json:"has_start"`
		Comm     string
		Complete bool
		Err      string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Pid != 1 {
		t.Fatalf("the child is pid %d in its namespace, want 1: %s", got.Pid, out)
	}
	if got.State != verdict.StateRunning || got.HasStart {
		t.Errorf("Probe(itself) in a namespace with another's /proc = %s, with a start time %v (%s, %q), want running with no start time", out, got.HasStart, got.Comm, got.Err)
	}
	if got.Complete {
		t.Errorf("the kernel evidence counts as complete with another namespace's /proc: %s", out)
	}
}

func TestProcHides(t *testing.T) {
	const plain = "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{plain, false},
		{plain + "63 45 0:39 / /proc rw,relatime - proc proc rw,hidepid=invisible\n", true},
		{plain + "63 45 0:39 / /proc rw - proc proc rw,hidepid=2,gid=4\n", true},
		{plain + "63 45 0:39 / /proc rw - proc proc rw,hidepid=0\n", false},
		{plain + "63 45 0:39 / /proc rw - proc proc rw,hidepid=off\n", false},
		{plain + "63 45 0:39 / /proc rw - proc proc rw,subset=pid\n", true},
		{"63 45 0:39 / /proc rw - proc proc rw,hidepid=2\n" + plain, false}, // covered by a later mount
		{"63 45 0:39 / /proc/sys rw - proc proc rw,hidepid=2\n" + plain, false},
		{"", false},
	} {
		if got := procHides(tc.in); got != tc.want {
			t.Errorf("procHides(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestEvidenceUnderHidepid: with a /proc mounted hidepid=invisible, the
// kernel evidence never counts as complete: the listing may leave out the
// very process that holds a lock.
func TestEvidenceUnderHidepid(t *testing.T) {
	out := probeSelfUnder(t, "--mount", "sh", "-c", `mount -t proc -o hidepid=invisible proc /proc && exec "$0"`, "{}")
	// Not only incomplete for a process it could not look into (a
	// sandbox's pid 1 may hide its files even from root): incomplete for
	// the listing itself.
	var got struct{ Complete, Others bool }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Complete || got.Others {
		t.Errorf("the kernel evidence counts as complete under hidepid=invisible: %s", out)
	}
}

// TestNsPids: a process with the same number in two pid namespaces is told
// apart from one in /proc's own by the NSpid line of its status.
func TestNsPids(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   int
	}{
		{"Name:\tx\nNSpid:\t30000\nNSpgid:\t1\n", 1},
		{"Name:\tx\nNSpid:\t30000\t30000\n", 2},
		{"Name:\tx\nNSpid:\t812\t5\t1\n", 3},
		{"Name:\tx\nPid:\t812\n", 0},
	} {
		if got := nsPids(tc.status); len(got) != tc.want {
			t.Errorf("nsPids(%q) = %q, want %d pids", tc.status, got, tc.want)
		}
	}
}

// TestScopeOfSandbox: a sandbox that mounts its own file over
// /etc/machine-id (firejail --machine-id, bwrap, unshare -m) keeps the
// host's root directory; its scope is still found, so a record it wrote in
// this boot is never taken for an earlier boot's.
func TestScopeOfSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare --mount needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux)")
	}
	h := LocalHost()
	if h.BootID == "" {
		t.Skip("no boot id")
	}
	mid := filepath.Join(t.TempDir(), "machine-id")
	const spoof = "0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(mid, []byte(spoof+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "sh", "-c",
		"mount --bind "+mid+" /etc/machine-id && echo ready && exec sleep 600")
	if line, err := startReady(t, cmd); err != nil {
		t.Skipf("cannot bind-mount over /etc/machine-id here: %q, %v", line, err)
	}
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
	if err != nil || len(strings.Fields(string(kids))) != 1 {
		t.Fatalf("the sandbox's process: %q, %v", kids, err)
	}
	ns, err := os.Readlink("/proc/" + strings.Fields(string(kids))[0] + "/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	// Found, not merely left unsure: a look made incomplete by some other
	// process (a sandbox's pid 1 may hide its root even from root) would
	// keep the record held for the wrong reason.
	used, complete := (&KernelEvidence{}).ScopeInUse(verdict.ScopeDigest(spoof, h.BootID, ns), h)
	if !used {
		t.Errorf("a live sandbox's scope is in no pid namespace of this boot (complete look: %v): its record would read gone wherever the look is complete", complete)
	}
}

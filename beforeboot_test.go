//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testutil"
	"github.com/lockctl/lockctl/verdict"
)

// TestBeforeBootLiveNamespace: a live holder in another pid namespace of
// this boot, whose generation B record is dated a year back (as a clock not
// yet set at boot would date it), is not gone: the kernel knows its
// namespace, so the record is of this boot. doctor --fix keeps it.
func TestBeforeBootLiveNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare --pid needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux)")
	}
	host := verdict.LocalHost()
	if host.MachineID == "" || host.BootID == "" {
		t.Skipf("no generation B scope on this host: %v", host.ScopeErr)
	}
	r := lcNewReaper(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	u := r.start(nil, unshare, "--pid", "--fork", "--mount-proc", sleep, "600")
	t.Cleanup(u.kill)
	var inner int
	testutil.WaitFor(t, 10*time.Second, "the namespaced sleep to start", func() bool {
		for _, c := range lcChildren(u.pid) {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(c) + "/comm"); string(b) == "sleep\n" {
				inner = c
				return true
			}
		}
		return u.done()
	})
	if inner == 0 {
		t.Skipf("unshare --pid --fork --mount-proc did not run here: %s", u.errText())
	}
	defer func() { _ = exec.Command("kill", "-9", strconv.Itoa(inner)).Run() }()
	ns, err := os.Readlink("/proc/" + strconv.Itoa(inner) + "/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	scope := verdict.ScopeDigest(host.MachineID, host.BootID, ns)
	if scope == host.Scope {
		t.Fatalf("the namespaced sleep is in this namespace (%s)", ns)
	}

	dir := t.TempDir()
	lock := filepath.Join(dir, "q.lock")
	tok := testutil.TokenB(1, 1)
	rec := filepath.Join(lock, "holder."+tok)
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec, testutil.RecB(tok, 1, host.Name, scope), 0o644); err != nil {
		t.Fatal(err)
	}
	yearAgo := time.Now().AddDate(-1, 0, 0)
	for _, p := range []string{rec, lock} {
		if err := os.Chtimes(p, yearAgo, yearAgo); err != nil {
			t.Fatal(err)
		}
	}
	got := r.doctor(dir)["q.lock"]
	if got.Verdict != "foreign" {
		t.Errorf("a live namespace's record dated before boot reads %s (%s), want foreign", got.Verdict, got.Reason)
	}
	before := testutil.Snapshot(t, dir)
	r.lockctl(nil, "doctor", "--fix", dir)
	testutil.SameTree(t, dir, before)
}

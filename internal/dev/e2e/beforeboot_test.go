//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/kernel"
	"golang.org/x/sys/unix"

	"github.com/lockctl/lockctl/internal/dev/testutil"
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
	host := kernel.LocalHost()
	if host.MachineID == "" || host.BootID == "" {
		t.Skipf("no generation B scope on this host: %v", host.ScopeErr)
	}
	r := lcNewReaper(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	u := r.start(nil, unshare, "--pid", "--fork", "--kill-child", "--mount-proc", sleep, "600")
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

// jailSleeper builds a static program that sleeps for an hour into
// jail/sleeper, and starts it in a new pid namespace chrooted to jail. It
// returns its pid and its pid namespace.
func jailSleeper(t *testing.T, r *lcReaper, jail string) (int, string) {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare (util-linux)")
	}
	src := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"time\"\n\nfunc main() { time.Sleep(time.Hour) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Through the reaper, which would otherwise steal go build's exit
	// status from os/exec ("waitid: no child processes").
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the jail's sleeper with")
	}
	if b := r.start([]string{"CGO_ENABLED=0"}, goTool, "build", "-o", filepath.Join(jail, "sleeper"), src); b.wait(2*time.Minute) != 0 {
		t.Fatalf("go build: %s", b.errText())
	}
	u := r.start(nil, unshare, "--pid", "--fork", "--kill-child", "--root="+jail, "/sleeper")
	t.Cleanup(u.kill)
	var pid int
	testutil.WaitFor(t, 10*time.Second, "the jailed sleeper to start", func() bool {
		for _, c := range lcChildren(u.pid) {
			pid = c
			return true
		}
		return u.done()
	})
	if pid == 0 {
		t.Fatalf("unshare --root did not run: %s", u.errText())
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	return pid, ns
}

// beforeBootLock makes dir/q.lock, a generation B lock of this host with
// scope, dated a year back.
func beforeBootLock(t *testing.T, dir, scope string) {
	t.Helper()
	lock := filepath.Join(dir, "q.lock")
	tok := testutil.TokenB(1, 1)
	rec := filepath.Join(lock, "holder."+tok)
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec, testutil.RecB(tok, 1, kernel.LocalHost().Name, scope), 0o644); err != nil {
		t.Fatal(err)
	}
	yearAgo := time.Now().AddDate(-1, 0, 0)
	for _, p := range []string{rec, lock} {
		if err := os.Chtimes(p, yearAgo, yearAgo); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBeforeBootJails: the machine id of another namespace is read as its
// processes read it, inside their root, and a hostile one cannot stall or
// sink doctor. A namespace whose /etc/machine-id is an absolute link (to a
// file in its own root) keeps its record of this boot foreign; one whose
// machine id is a FIFO, or /dev/zero, leaves the look incomplete (foreign),
// at once.
func TestBeforeBootJails(t *testing.T) {
	r := lcNewReaper(t)
	host := kernel.LocalHost()
	if host.BootID == "" {
		t.Skip("no boot id")
	}
	t.Run("link", func(t *testing.T) {
		jail := t.TempDir()
		const mid = "cafecafecafecafecafecafecafecafe"
		for _, d := range []string{"etc", "run"} {
			if err := os.Mkdir(filepath.Join(jail, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(jail, "run", "mid"), []byte(mid+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/run/mid", filepath.Join(jail, "etc", "machine-id")); err != nil {
			t.Fatal(err)
		}
		_, ns := jailSleeper(t, r, jail)
		dir := t.TempDir()
		beforeBootLock(t, dir, verdict.ScopeDigest(mid, host.BootID, ns))
		// Foreign because its scope was found, not merely because some
		// other process could not be looked into (a sandbox's pid 1 hides
		// its root even from root on some machines).
		if got := r.doctor(dir)["q.lock"]; got.Verdict != "foreign" || !strings.Contains(got.Reason, "a pid namespace of this boot") {
			t.Errorf("a live jailed namespace's record reads %s (%s), want foreign: its scope is a pid namespace of this boot", got.Verdict, got.Reason)
		}
	})
	for _, kind := range []string{"fifo", "zero"} {
		t.Run(kind, func(t *testing.T) {
			jail := t.TempDir()
			if err := os.Mkdir(filepath.Join(jail, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			id := filepath.Join(jail, "etc", "machine-id")
			var err error
			if kind == "fifo" {
				err = syscall.Mkfifo(id, 0o644)
			} else {
				// /dev/zero of its own root, where the link resolves.
				if err = os.Mkdir(filepath.Join(jail, "dev"), 0o755); err == nil {
					err = syscall.Mknod(filepath.Join(jail, "dev", "zero"), syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 5)))
				}
				if err == nil {
					err = os.Symlink("/dev/zero", id)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			jailSleeper(t, r, jail)
			dir := t.TempDir()
			beforeBootLock(t, dir, strings.Repeat("ab", 32))
			p := r.start(nil, lcBinary(t), "doctor", "--json", dir)
			p.wait(20 * time.Second) // a doctor that blocks in open(2) fails here
			if !strings.Contains(p.outText(), `"verdict": "foreign"`) {
				t.Errorf("with a %s for a machine id, doctor says:\n%s\n%s", kind, p.outText(), p.errText())
			}
		})
	}
}

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

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// The producers of issue 43, each made to take its lock by the real
// program where this machine has it, live and after SIGKILL.

// TestGnuPGDotlock: a real gpg importing a key holds pubring.kbx.lock
// (common/dotlock.c: "%10d\n<node>\n", hard-linked from its .#lk* file)
// while it writes the keybox. It is made to wait there: the keybox's
// temporary file is a FIFO nobody reads, so gpg blocks opening it with
// the lock held. doctor says live, naming gpg's pid, and --fix (with
// --legacy-older-than too) keeps it. SIGKILLed, gpg leaves it: gone, as
// gpg itself would say ("removing stale lockfile"); --fix removes it, and
// gpg imports again.
func TestGnuPGDotlock(t *testing.T) {
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		t.Skip("gpg is not installed")
	}
	key, err := filepath.Abs(filepath.Join("testdata", "gnupg-public-key.asc"))
	if err != nil {
		t.Fatal(err)
	}
	r := lcNewReaper(t)
	home := filepath.Join(t.TempDir(), "gnupg")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(ownHome(t, t.TempDir()), "GNUPGHOME="+home)
	lock, tmp := filepath.Join(home, "pubring.kbx.lock"), filepath.Join(home, "pubring.kbx.tmp")
	if err := syscall.Mkfifo(tmp, 0o600); err != nil {
		t.Fatal(err)
	}
	g := r.start(env, gpg, "--batch", "--no-autostart", "--import", key)
	testutil.WaitFor(t, 20*time.Second, "gpg to take pubring.kbx.lock", func() bool { return lcExists(lock) || g.done() })
	if g.done() {
		t.Fatalf("gpg exited: %s", g.errText())
	}
	got := r.judgeOne(lock)
	if got.Verdict != "live" || got.Producer != "gnupg" || got.Holder == nil || got.Holder.Pid != int64(g.pid) {
		t.Fatalf("doctor on a running gpg's dotlock: %s of %q (%s), want live, gnupg, pid %d", got.Verdict, got.Producer, got.Reason, g.pid)
	}
	before := lcRead(t, lock)
	r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", lock)
	if b, err := os.ReadFile(lock); err != nil || string(b) != before {
		t.Fatalf("--fix touched a live gpg's dotlock: %q, %v", b, err)
	}
	g.kill()
	got = r.judgeOne(lock)
	if got.Verdict != "gone" || len(got.Remove) == 0 {
		t.Fatalf("doctor on a SIGKILLed gpg's dotlock: %s (%s), remove %v, want gone with a remedy", got.Verdict, got.Reason, got.Remove)
	}
	r.lockctl(nil, "doctor", "--fix", lock)
	if lcExists(lock) {
		t.Fatalf("--fix left a gone gpg's dotlock")
	}
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	again := r.start(env, gpg, "--batch", "--no-autostart", "--import", key)
	if code := again.wait(60 * time.Second); code != 0 || strings.Contains(again.errText(), "lockfile") || strings.Contains(again.errText(), "waiting for lock") {
		t.Errorf("gpg after --fix: exit %d\n%s", code, again.errText())
	}
}

// TestGnuPGAgreesOnGone: a dotlock doctor calls gone, gpg itself calls
// stale and removes ("removing stale lockfile (created by <pid>)").
func TestGnuPGAgreesOnGone(t *testing.T) {
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		t.Skip("gpg is not installed")
	}
	key, err := filepath.Abs(filepath.Join("testdata", "gnupg-public-key.asc"))
	if err != nil {
		t.Fatal(err)
	}
	r := lcNewReaper(t)
	home := filepath.Join(t.TempDir(), "gnupg")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(ownHome(t, t.TempDir()), "GNUPGHOME="+home)
	lock := filepath.Join(home, "pubring.kbx.lock")
	dead := testutil.Gone(t)
	node, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		node = utsString(u.Nodename[:])
	}
	testutil.WriteFile(t, lock, []byte(padPid(dead)+"\n"+node+"\n"))
	if got := r.judgeOne(lock); got.Verdict != "gone" || got.Producer != "gnupg" {
		t.Fatalf("doctor on a dotlock of dead pid %d: %s of %q (%s), want gone, gnupg", dead, got.Verdict, got.Producer, got.Reason)
	}
	g := r.start(env, gpg, "--batch", "--no-autostart", "--import", key)
	if code := g.wait(60 * time.Second); code != 0 || !strings.Contains(g.errText(), "removing stale lockfile (created by "+strconv.Itoa(dead)+")") {
		t.Errorf("gpg on the same lock: exit %d, want it removed as stale\n%s", code, g.errText())
	}
}

// padPid is pid as "%10d".
func padPid(pid int) string {
	s := strconv.Itoa(pid)
	return strings.Repeat(" ", max(0, 10-len(s))) + s
}

// utsString is a NUL-terminated field of struct utsname.
func utsString(f []int8) string {
	b := make([]byte, 0, len(f))
	for _, c := range f {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// TestDoctorUnprivilegedSeesOtherUsersHolderLive runs lockctl as "nobody"
// against a lock held by a live process of root's. kill(pid, 0) then fails
// with EPERM, which means the process exists: the verdict must be live,
// never gone. It re-runs this test binary, copied into a directory nobody
// can reach, as lockctl.
func TestDoctorUnprivilegedSeesOtherUsersHolderLive(t *testing.T) {
	cred := asNobody(t, "it starts a root-owned holder and runs lockctl as nobody")

	// Nobody must run the binary and read the registry.
	dir, bin := publicBin(t)
	reg := filepath.Join(dir, "reg")
	if err := os.Mkdir(reg, 0o755); err != nil {
		t.Fatal(err)
	}

	pid := testutil.Sleeper(t).Process.Pid
	lock := filepath.Join(reg, "held.lock")
	if err := os.WriteFile(lock, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "doctor", reg)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "NO_COLOR=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("lockctl doctor as nobody: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())

	if code != cli.ExitOK {
		t.Errorf("lockctl doctor as nobody exited %d, want %d (a live lock needs no attention)", code, cli.ExitOK)
	}
	wantHead := regexp.MustCompile(`(?m)^LIVE +` + regexp.QuoteMeta(lock) + `$`)
	if !wantHead.MatchString(stdout.String()) {
		t.Errorf("lockctl doctor as nobody: no LIVE line for %s", lock)
	}
	// The reason proves the EPERM path was taken, not some other way to
	// "running".
	wantWhy := fmt.Sprintf("pid %d (sleep) is running as another user", pid)
	if !strings.Contains(stdout.String(), wantWhy) {
		t.Errorf("lockctl doctor as nobody: stdout lacks %q", wantWhy)
	}
	if !strings.Contains(stdout.String(), "1 lock: 1 live") {
		t.Errorf("lockctl doctor as nobody: summary is not %q", "1 lock: 1 live")
	}
	if stderr.Len() != 0 {
		t.Errorf("lockctl doctor as nobody: stderr = %q, want empty", stderr.String())
	}
	if b, err := os.ReadFile(lock); err != nil || string(b) != strconv.Itoa(pid)+"\n" {
		t.Errorf("lock after doctor = %q, %v; want it untouched", b, err)
	}
}

func copyFile(t *testing.T, from, to string, perm fs.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, perm); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorDeniedSaysSo: a registry lockctl may not read fails with exit
// 2 and a hint that says the reason, permission, and the way out, not
// "check the path".
func TestDoctorDeniedSaysSo(t *testing.T) {
	cred := asNobody(t, "it runs lockctl as nobody over a root-only directory")
	dir, bin := publicBin(t)
	shut := filepath.Join(dir, "shut")
	if err := os.Mkdir(shut, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "doctor", shut)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, code := runAs(t, cmd)
	if code != cli.ExitError || !strings.Contains(string(out), "hint: permission denied: run lockctl as the registry's owner, or as root") {
		t.Errorf("doctor as nobody on a root-only registry: exit %d\n%s", code, out)
	}
}

// asNobody is the credential of the user nobody, or skips the test (why
// says what it needs root for) when not root or there is no such user.
func asNobody(t *testing.T, why string) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: " + why)
	}
	nobody, err := lookupUser("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.ParseUint(nobody.Uid, 10, 32)
	gid, _ := strconv.ParseUint(nobody.Gid, 10, 32)
	if uid == 0 {
		t.Skip("nobody is uid 0 here")
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

// TestMessagesWithoutRights: where lockctl may not write, every message
// names the place and the way out: acquire in a registry it may not write
// names the registry (not the internal name of its build), --fix says whom
// to ask, and a wait on a gone lock it may not break says the holder is
// gone and why it could not be broken, not "cannot tell whether it is held".
func TestMessagesWithoutRights(t *testing.T) {
	cred := asNobody(t, "it runs lockctl as nobody over a registry root owns")
	dir, bin := publicBin(t)
	// shut: root's, 0755. reg: sticky and world-writable, as /run/lock
	// is: nobody may make a lock there, but not rename root's.
	shut, reg := filepath.Join(dir, "shut"), filepath.Join(dir, "reg")
	if err := os.Mkdir(shut, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(reg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(reg, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	gone := testutil.Gone(t)
	testutil.WriteFile(t, filepath.Join(reg, "gone.lock"), testutil.FileRec(gone))
	as := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, code := runAs(t, cmd)
		return string(out), code
	}
	out, code := as("run", "--quiet", "--timeout", "300ms", filepath.Join(shut, "new.lock"), "--", "true")
	if code == 0 || !strings.Contains(out, "cannot make a lock in "+shut) || strings.Contains(out, ".new.") {
		t.Errorf("run in a registry nobody may not write: exit %d\n%s", code, out)
	}
	out, code = as("doctor", "--fix", reg)
	if !strings.Contains(out, "this user may not rename in "+reg) || !strings.Contains(out, "as the lock's owner or as root") {
		t.Errorf("doctor --fix as nobody: exit %d\n%s", code, out)
	}
	out, code = as("run", "--quiet", "--timeout", "300ms", filepath.Join(reg, "gone.lock"), "--", "true")
	if code != cli.ExitTimeout || !strings.Contains(out, "its holder is gone") || !strings.Contains(out, "ask the lock's owner, or root, to run 'lockctl doctor --fix") {
		t.Errorf("run on a gone lock nobody may not break: exit %d\n%s", code, out)
	}
	if !lcExists(filepath.Join(reg, "gone.lock")) {
		t.Error("the gone lock vanished")
	}
}

// TestDoctorSaysWhatItCouldNotRead: as nobody, over a registry with a
// subtree only root may read, doctor finds no lock where it could look,
// but says so in its summary and its JSON ("complete": false, "unread"
// naming the directory) and exits 2, so that a health check does not pass
// over a registry it never saw; --allow-partial accepts the partial look.
func TestDoctorSaysWhatItCouldNotRead(t *testing.T) {
	cred := asNobody(t, "it runs lockctl as nobody over a subtree only root may read")
	dir, bin := publicBin(t)
	reg, secret := filepath.Join(dir, "reg"), filepath.Join(dir, "reg", "secret")
	for _, d := range []string{reg, secret} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WriteFile(t, filepath.Join(secret, "gone.lock"), []byte(strconv.Itoa(testutil.Gone(t))+"\n"))
	if err := os.Chmod(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	as := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, code := runAs(t, cmd)
		return string(out), code
	}
	out, code := as("doctor", reg)
	if code != cli.ExitError || !strings.Contains(out, "no locks found where it could look, but 1 directory was not read, so locks there were not seen ("+secret+")") {
		t.Errorf("doctor as nobody over an unreadable subtree: exit %d, want 2\n%s", code, out)
	}
	if out, code := as("doctor", "--allow-partial", reg); code != 0 {
		t.Errorf("doctor --allow-partial: exit %d, want 0\n%s", code, out)
	}
	// The default places are not named: $XDG_RUNTIME_DIR holds systemd's
	// inaccessible/ placeholders on every desktop. The summary still says
	// what was not read; the exit status goes by the locks.
	// (runAs sets a bare environment: no LOCKCTL_PATH.)
	cmd0 := exec.Command("/usr/bin/env", "XDG_RUNTIME_DIR="+reg, "HOME="+dir, bin, "doctor")
	cmd0.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, code := runAs(t, cmd0); code == cli.ExitError || !strings.Contains(string(out), "not read, so locks there were not seen") {
		t.Errorf("doctor over the default places with an unreadable subtree: exit %d, want 0 or 1 and the summary saying so\n%s", code, out)
	}
	cmd := exec.Command(bin, "doctor", "--json", reg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	stdout, err := cmd.Output()
	var doc struct {
		Complete bool `json:"complete"`
		Unread   []struct{ Path, Error string }
	}
	if jerr := json.Unmarshal(stdout, &doc); jerr != nil || doc.Complete || len(doc.Unread) != 1 || doc.Unread[0].Path != secret {
		t.Errorf("doctor --json as nobody (%v): complete %v, unread %+v, want false and %s\n%s", err, doc.Complete, doc.Unread, secret, stdout)
	}
}

// passwdUser is a user's ids as /etc/passwd gives them.
type passwdUser struct{ Uid, Gid string }

// lookupUser reads name's ids from /etc/passwd. It is not os/user: that
// links libc (cgo) into this test binary, which is also the lockctl the
// tests run (lcBinary), and the real lockctl links none
// (TestBinaryLinksNoCgo).
func lookupUser(name string) (*passwdUser, error) {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 4 && f[0] == name {
			return &passwdUser{Uid: f[2], Gid: f[3]}, nil
		}
	}
	return nil, fmt.Errorf("no user %s in /etc/passwd", name)
}

//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
	r := lcNewReaper(t)
	h := startHeldGPG(t, r)
	g, lock := h.g, h.lock
	r.liveThenSwept(lock, lock, "gnupg", g, "gpg's dotlock", func() lcLock { return r.judgeOne(lock) })
	h.importAgain()
}

// heldGPG is a real gpg importing a key, made to wait holding its dotlock
// pubring.kbx.lock: the keybox's temporary file is a FIFO nobody reads,
// so gpg blocks opening it with the lock held.
type heldGPG struct {
	g          *lcProc
	home, lock string
	// importAgain, once the lock is swept, lets a new gpg import the key
	// and fails the test unless it does, without a word about a lock.
	importAgain func()
}

func startHeldGPG(t *testing.T, r *lcReaper) heldGPG {
	t.Helper()
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		t.Skip("gpg is not installed")
	}
	key, err := filepath.Abs(filepath.Join("testdata", "gnupg-public-key.asc"))
	if err != nil {
		t.Fatal(err)
	}
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
	return heldGPG{g: g, home: home, lock: lock, importAgain: func() {
		t.Helper()
		if err := os.Remove(tmp); err != nil {
			t.Fatal(err)
		}
		again := r.start(env, gpg, "--batch", "--no-autostart", "--import", key)
		if code := again.wait(60 * time.Second); code != 0 || strings.Contains(again.errText(), "lockfile") || strings.Contains(again.errText(), "waiting for lock") {
			t.Errorf("gpg after --fix: exit %d\n%s", code, again.errText())
		}
	}}
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
	// A pid that is gone, made before the reaper, which would reap
	// testutil.Gone's child first and leave it no status to wait for.
	dead := testutil.Gone(t)
	r := lcNewReaper(t)
	home := filepath.Join(t.TempDir(), "gnupg")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(ownHome(t, t.TempDir()), "GNUPGHOME="+home)
	lock := filepath.Join(home, "pubring.kbx.lock")
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

// TestShadowVipwLock: a real vipw, waiting in its editor, holds
// passwd.lock ("<pid>\0", shadow lib/commonio.c). It runs in a mount
// namespace of its own with a copy of /etc bound over /etc, so the lock is
// made in the test's directory and the machine's own /etc is never
// touched, and the namespace ends with the test's processes. doctor says
// live, naming vipw's pid, and --fix keeps it; SIGKILLed, vipw leaves it:
// gone, --fix removes it, and vipw runs again without "already used by
// PID".
func TestShadowVipwLock(t *testing.T) {
	vipw, err := exec.LookPath("vipw")
	if err != nil {
		t.Skip("vipw (Debian's passwd) is not installed")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare, to bind a copy of /etc over /etc in a mount namespace of its own")
	}
	r := lcNewReaper(t)
	work := t.TempDir()
	etc := filepath.Join(work, "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"passwd", "group", "shadow", "login.defs", "nsswitch.conf"} {
		if b, err := os.ReadFile(filepath.Join("/etc", f)); err == nil {
			testutil.WriteFile(t, filepath.Join(etc, f), b)
		}
	}
	ready, editor := filepath.Join(work, "ready"), filepath.Join(work, "editor.sh")
	testutil.WriteFile(t, editor, []byte("#!/bin/sh\n: >"+ready+"\nexec sleep 600\n"))
	if err := os.Chmod(editor, 0o755); err != nil {
		t.Fatal(err)
	}
	inNS := func() []string {
		return []string{unshare, "-m", "sh", "-c", `mount --make-rprivate / && mount --bind "$1" /etc && exec "$2"`, "sh", etc, vipw}
	}
	lock := filepath.Join(etc, "passwd.lock")
	v := r.start(append(ownHome(t, t.TempDir()), "EDITOR="+editor, "VISUAL="+editor), inNS()...)
	testutil.WaitFor(t, 20*time.Second, "vipw to start its editor", func() bool { return lcExists(ready) || v.done() })
	if v.done() {
		t.Fatalf("vipw exited: %s", v.errText())
	}
	r.liveThenSwept(lock, lock, "shadow", v, "vipw's lock", func() lcLock { return r.judgeOne(lock) })
	again := r.start(append(ownHome(t, t.TempDir()), "EDITOR=true", "VISUAL=true"), inNS()...)
	if code := again.wait(30 * time.Second); code != 0 || strings.Contains(again.errText(), "already used") {
		t.Errorf("vipw after --fix: exit %d\n%s", code, again.errText())
	}
}

// TestXorgDisplayLock: a real Xvfb holds /tmp/.X<n>-lock ("%10lu\n",
// xorg-server os/utils.c, LockServer). It runs in a mount namespace of its
// own with the test's directory bound over /tmp, so the machine's own /tmp
// and displays are never touched. doctor finds the lock with no --name:
// live, naming the server's pid, and --fix keeps it; SIGKILLed, the server
// leaves it: gone, --fix removes it, and Xvfb starts on that display again
// (it would have removed it itself).
func TestXorgDisplayLock(t *testing.T) {
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Skip("Xvfb is not installed")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare, to bind a directory over /tmp in a mount namespace of its own")
	}
	r := lcNewReaper(t)
	tmp := t.TempDir()
	server := func() *lcProc {
		return r.start(nil, unshare, "-m", "sh", "-c", `mount --make-rprivate / && mount --bind "$1" /tmp && exec "$2" :7 -nolisten tcp`, "sh", tmp, xvfb)
	}
	lock := filepath.Join(tmp, ".X7-lock")
	x := server()
	testutil.WaitFor(t, 20*time.Second, "Xvfb to lock display :7", func() bool { return lcExists(lock) || x.done() })
	if x.done() {
		t.Fatalf("Xvfb exited: %s", x.errText())
	}
	testutil.WaitFor(t, 10*time.Second, "Xvfb to write its pid", func() bool { b, _ := os.ReadFile(lock); return len(b) == 11 })
	r.liveThenSwept(lock, tmp, "xorg", x, "Xvfb's display lock", func() lcLock { return r.found(tmp)[".X7-lock"] })
	again := server()
	testutil.WaitFor(t, 20*time.Second, "Xvfb to lock display :7 again", func() bool { return lcExists(lock) || again.done() })
	if again.done() {
		t.Fatalf("Xvfb after --fix exited: %s", again.errText())
	}
	again.kill()
}

// found runs doctor --json on dir, which holds more than locks (an X
// server's socket directory), and returns its judgement of each lock
// there, by base name.
func (r *lcReaper) found(dir string) map[string]lcLock {
	r.t.Helper()
	res := r.lockctl(nil, "doctor", "--json", dir)
	var doc lcDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		r.t.Fatalf("lockctl doctor --json %s: exit %d, %v\n%s", dir, res.code, err, res.stderr)
	}
	out := map[string]lcLock{}
	for _, l := range doc.Locks {
		out[filepath.Base(l.Path)] = l
	}
	return out
}

// TestShellPidDir: the usual shell lock, 'mkdir app.lock && echo $$ >
// app.lock/pid', made by a real sh: live while the shell runs, naming it;
// once it is SIGKILLed, gone, but with no remedy and the reason (such
// scripts take a stale lock by rewriting the pid file in place), and
// --fix, even with --legacy-older-than, leaves it as it is.
func TestShellPidDir(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	r := lcNewReaper(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "app.lock")
	s := r.start(nil, sh, "-c", `mkdir "$1" && echo $$ > "$1/pid" && exec sleep 600`, "sh", lock)
	testutil.WaitFor(t, 10*time.Second, "sh to take app.lock", func() bool { b, _ := os.ReadFile(filepath.Join(lock, "pid")); return len(b) > 0 || s.done() })
	r.liveThenGoneInPlace(dir, s, "a shell's lock directory", func() lcLock { return r.doctor(dir)["app.lock"] })
}

// liveThenGoneInPlace checks a lock of a format whose producers rewrite it
// in place, held by s: live, naming s, while s runs; once s is SIGKILLed,
// gone with no remedy and the in-place reason; and --fix, even with
// --legacy-older-than, leaves dir exactly as it was.
func (r *lcReaper) liveThenGoneInPlace(dir string, s *lcProc, what string, judge func() lcLock) {
	t := r.t
	t.Helper()
	got := judge()
	if got.Verdict != "live" || got.Holder == nil || got.Holder.Pid != int64(s.pid) {
		t.Fatalf("doctor on %s held by a running process: %s (%s), want live, pid %d", what, got.Verdict, got.Reason, s.pid)
	}
	s.kill()
	got = judge()
	if got.Verdict != "gone" || len(got.Remove) != 0 || !strings.Contains(strings.Join(got.Notes, "\n"), "in place") {
		t.Fatalf("doctor on %s of a SIGKILLed holder: %s (%s), remove %v, notes %q; want gone, no remedy, the in-place reason", what, got.Verdict, got.Reason, got.Remove, got.Notes)
	}
	before := testutil.Snapshot(t, dir)
	r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", dir)
	testutil.SameTree(t, dir, before)
}

// TestTerraformStateLock: a real terraform console holds the local
// backend's lock, an fcntl write lock on terraform.tfstate, and describes
// it in .terraform.tfstate.lock.info. doctor finds the info with no
// --name: live, naming terraform's pid as the lock's holder, and --fix
// keeps it. SIGKILLed, terraform leaves the info behind: free (the kernel
// dropped the lock), never removed, and the next terraform takes the lock
// and writes its own info over it.
func TestTerraformStateLock(t *testing.T) {
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("terraform is not installed")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	r := lcNewReaper(t)
	work := t.TempDir()
	testutil.WriteFile(t, filepath.Join(work, "main.tf"), []byte("output \"x\" { value = 1 }\n"))
	in := filepath.Join(work, "stdin")
	if err := syscall.Mkfifo(in, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(ownHome(t, t.TempDir()), "TF_CLI_CONFIG_FILE=/dev/null", "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	// Its standard input a FIFO it holds open both ways: console waits on
	// it for ever, holding the lock.
	console := func() *lcProc {
		return r.start(env, sh, "-c", `cd "$1" && exec "$2" console <>"$3"`, "sh", work, tf, in)
	}
	info := filepath.Join(work, ".terraform.tfstate.lock.info")
	c := console()
	testutil.WaitFor(t, 60*time.Second, "terraform console to lock the state", func() bool { return lcExists(info) || c.done() })
	if c.done() {
		t.Fatalf("terraform console exited: %s%s", c.outText(), c.errText())
	}
	got := r.found(work)[".terraform.tfstate.lock.info"]
	if got.Verdict != "live" || got.Producer != "terraform" || !strings.Contains(got.Reason, "pid "+strconv.Itoa(c.pid)) {
		t.Fatalf("doctor on a running terraform's lock info: %s of %q (%s), want live, terraform, pid %d", got.Verdict, got.Producer, got.Reason, c.pid)
	}
	before := lcRead(t, info)
	r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", work)
	if b, err := os.ReadFile(info); err != nil || string(b) != before {
		t.Fatalf("--fix touched a live terraform's lock info: %q, %v", b, err)
	}
	c.kill()
	got = r.judgeOne(info)
	if got.Verdict != "free" || len(got.Remove) != 0 {
		t.Fatalf("doctor on a SIGKILLed terraform's lock info: %s (%s), remove %v, want free, no remedy", got.Verdict, got.Reason, got.Remove)
	}
	r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", work)
	if b, err := os.ReadFile(info); err != nil || string(b) != before {
		t.Fatalf("--fix touched a free terraform lock info: %q, %v", b, err)
	}
	again := console()
	testutil.WaitFor(t, 60*time.Second, "terraform console to lock the state again", func() bool { b, _ := os.ReadFile(info); return string(b) != before || again.done() })
	if again.done() {
		t.Fatalf("terraform console after a killed one exited: %s%s", again.outText(), again.errText())
	}
	if got := r.judgeOne(info); got.Verdict != "live" {
		t.Errorf("doctor on the next terraform's lock: %s (%s), want live", got.Verdict, got.Reason)
	}
	again.kill()
}

// TestNanoLock: a real nano --locking, on a terminal script(1) gives it,
// writes .<file>.swp (src/files.c, write_lockfile: "b0nano", its pid at
// 24), which vim's reader would not take for a swap. doctor finds it with
// no --name: live, naming nano's pid, and --fix keeps it; SIGKILLed, nano
// leaves it: gone, --fix removes it, and nano opens the file again without
// asking whether to open it anyway.
func TestNanoLock(t *testing.T) {
	nano, err := exec.LookPath("nano")
	if err != nil {
		t.Skip("nano is not installed")
	}
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed: nano needs a terminal")
	}
	r := lcNewReaper(t)
	dir := t.TempDir()
	file, lock := filepath.Join(dir, "notes.txt"), filepath.Join(dir, ".notes.txt.swp")
	testutil.WriteFile(t, file, []byte("first\n"))
	in := filepath.Join(t.TempDir(), "stdin")
	if err := syscall.Mkfifo(in, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(ownHome(t, t.TempDir()), "TERM=xterm")
	// script's standard input is a FIFO it holds open both ways, so it
	// waits for ever; nano, its child on the terminal it made, with it.
	start := func() *lcProc {
		return r.start(env, "/bin/sh", "-c", `exec "$1" -q -E never -c "exec $2 --locking --ignorercfiles $3" /dev/null <>"$4"`, "sh", script, nano, file, in)
	}
	s := start()
	testutil.WaitFor(t, 20*time.Second, "nano to write its lock", func() bool { b, _ := os.ReadFile(lock); return len(b) == 1024 || s.done() })
	if s.done() {
		t.Fatalf("script and nano exited: %s", s.errText())
	}
	got := r.found(dir)[".notes.txt.swp"]
	if got.Verdict != "live" || got.Producer != "nano" || got.Holder == nil {
		t.Fatalf("doctor on a running nano's lock: %s of %q (%s), want live, nano", got.Verdict, got.Producer, got.Reason)
	}
	pid := int(got.Holder.Pid)
	if !slices.Contains(lcChildren(s.pid), pid) {
		t.Fatalf("the lock names pid %d, which is not nano under script %d (%v)", pid, s.pid, lcChildren(s.pid))
	}
	before := lcRead(t, lock)
	r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", dir)
	if b, err := os.ReadFile(lock); err != nil || string(b) != before {
		t.Fatalf("--fix touched a live nano's lock: %v", err)
	}
	r.killPid(pid)
	testutil.WaitFor(t, 10*time.Second, "nano to be gone", func() bool { return syscall.Kill(pid, 0) != nil })
	got = r.judgeOne(lock)
	if got.Verdict != "gone" || len(got.Remove) == 0 {
		t.Fatalf("doctor on a SIGKILLed nano's lock: %s (%s), remove %v, want gone with a remedy", got.Verdict, got.Reason, got.Remove)
	}
	s.kill()
	r.lockctl(nil, "doctor", "--fix", dir)
	if lcExists(lock) {
		t.Fatalf("--fix left a gone nano's lock")
	}
	again := start()
	testutil.WaitFor(t, 20*time.Second, "nano to lock the file again", func() bool { b, _ := os.ReadFile(lock); return len(b) == 1024 || again.done() })
	if out := again.outText(); again.done() || strings.Contains(out, "open anyway") {
		t.Errorf("nano after --fix: done %v\n%s", again.done(), out)
	}
	again.kill()
}

// TestDaemonPidFile: a daemon's pid file, made by a real sh ('echo $$ >
// run/app.pid'), is found in a walk with no --name: live while the shell
// runs; once it is SIGKILLed, gone, with no remedy and the reason
// (daemons rewrite their pid files in place), and --fix, even with
// --legacy-older-than, leaves it as it is. A file that merely ends in .pid
// is not reported.
func TestDaemonPidFile(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	r := lcNewReaper(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(dir, "notes.pid"), []byte("not a pid\n"))
	pidfile := filepath.Join(run, "app.pid")
	s := r.start(nil, sh, "-c", `echo $$ > "$1" && exec sleep 600`, "sh", pidfile)
	testutil.WaitFor(t, 10*time.Second, "sh to write its pid file", func() bool { b, _ := os.ReadFile(pidfile); return len(b) > 0 || s.done() })
	found := r.found(dir)
	if _, ok := found["notes.pid"]; ok || len(found) != 1 {
		t.Errorf("doctor found %v, want app.pid alone", slices.Collect(maps.Keys(found)))
	}
	r.liveThenGoneInPlace(dir, s, "a daemon's pid file", func() lcLock { return r.found(dir)["app.pid"] })
}

// TestCcacheAgreesOnGone: a ccache lock link naming this host and a dead
// pid, quiet for longer than ccache's 2 s, is gone to doctor, and ccache
// itself breaks it ("Breaking ... since it has been inactive") and zeroes
// its statistics under it. One just taken is not gone yet: ccache would
// still wait on it.
func TestCcacheAgreesOnGone(t *testing.T) {
	ccache, err := exec.LookPath("ccache")
	if err != nil {
		t.Skip("ccache is not installed")
	}
	// A pid that is gone, made before the reaper, which would reap
	// testutil.Gone's child first and leave it no status to wait for.
	dead := testutil.Gone(t)
	r := lcNewReaper(t)
	cache := filepath.Join(t.TempDir(), "ccache")
	env := append(ownHome(t, t.TempDir()), "CCACHE_DIR="+cache)
	if code := r.start(env, ccache, "-z").wait(30 * time.Second); code != 0 {
		t.Fatalf("ccache -z on an empty cache: exit %d", code)
	}
	sub := filepath.Join(cache, "0")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(sub, "stats"), nil)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(sub, "stats.lock")
	taken := time.Now().Add(-time.Minute)
	target := fmt.Sprintf("%s-%d-140152213341952-%d.%09d", host, dead, taken.Unix(), taken.Nanosecond())
	if err := os.Symlink(target, lock); err != nil {
		t.Fatal(err)
	}
	if got := r.judgeOne(lock); got.Verdict != "unknown" || got.Producer != "ccache" {
		t.Fatalf("doctor on a ccache lock of dead pid %d made just now: %s of %q (%s), want unknown, ccache", dead, got.Verdict, got.Producer, got.Reason)
	}
	ts := unix.NsecToTimespec(taken.UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, lock, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	if got := r.judgeOne(lock); got.Verdict != "gone" || got.Producer != "ccache" {
		t.Fatalf("doctor on a quiet ccache lock of dead pid %d: %s of %q (%s), want gone, ccache", dead, got.Verdict, got.Producer, got.Reason)
	}
	z := r.start(append(env, "CCACHE_DEBUG=1", "CCACHE_LOGFILE="+filepath.Join(t.TempDir(), "log")), ccache, "-z")
	if code := z.wait(60 * time.Second); code != 0 {
		t.Fatalf("ccache -z over the gone lock: exit %d\n%s", code, z.errText())
	}
	if t2, err := os.Readlink(lock); err == nil && t2 == target {
		t.Errorf("ccache -z left the gone lock %s -> %s in place", lock, t2)
	}
}

// liveThenSwept checks the lock of a producer whose records --fix may
// claim, held by p: live, naming p, while p runs, and --fix (even with
// --legacy-older-than, on fixArg) leaves its bytes; once p is SIGKILLed,
// gone with a remedy, and --fix removes it.
func (r *lcReaper) liveThenSwept(lock, fixArg, producer string, p *lcProc, what string, judge func() lcLock) {
	t := r.t
	t.Helper()
	got := judge()
	if got.Verdict != "live" || got.Producer != producer || got.Holder == nil || got.Holder.Pid != int64(p.pid) {
		t.Fatalf("doctor on a running %s: %s of %q (%s), want live, %s, pid %d", what, got.Verdict, got.Producer, got.Reason, producer, p.pid)
	}
	before := lcRead(t, lock)
	r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", fixArg)
	if b, err := os.ReadFile(lock); err != nil || string(b) != before {
		t.Fatalf("--fix touched a live %s: %q, %v", what, b, err)
	}
	p.kill()
	got = r.judgeOne(lock)
	if got.Verdict != "gone" || len(got.Remove) == 0 {
		t.Fatalf("doctor on a SIGKILLed %s: %s (%s), remove %v, want gone with a remedy", what, got.Verdict, got.Reason, got.Remove)
	}
	r.lockctl(nil, "doctor", "--fix", fixArg)
	if lcExists(lock) {
		t.Fatalf("--fix left a gone %s", what)
	}
}

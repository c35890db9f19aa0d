//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// The producers' own programs, beyond git, hg, vim and PostgreSQL
// (producers_test.go): Emacs, Chromium, Firefox, and npm's proper-lockfile
// and lockfile under Node.js. Each makes its real lock, live and then
// SIGKILLed; doctor finds it with no --name and judges it by the program's
// own rule (docs/formats.md), --fix never removes a live one, and after
// --fix the program takes its lock again by itself.

// killTree SIGKILLs pid and every process below it, children first seen
// before the kill, and waits until pid is reaped (the reaper's close kills
// any that escaped by forking twice).
func (r *lcReaper) killTree(pid int) {
	r.t.Helper()
	var below []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range lcChildren(p) {
			below = append(below, c)
			walk(c)
		}
	}
	walk(pid)
	r.killPid(pid)
	for _, c := range below {
		r.killPid(c)
	}
}

// TestEmacsLock: a real Emacs with a modified buffer holds .#<file>, a
// symbolic link to user@host.pid: live while Emacs runs (--fix, even with
// --legacy-older-than, leaves it), gone once it is SIGKILLed, removed by
// --fix, after which Emacs edits and saves the file again without a word
// about a lock.
func TestEmacsLock(t *testing.T) {
	emacs, err := exec.LookPath("emacs")
	if err != nil {
		t.Skip("Emacs (emacs-nox) is not installed")
	}
	r := lcNewReaper(t)
	dir := t.TempDir()
	file, lock := filepath.Join(dir, "notes.txt"), filepath.Join(dir, ".#notes.txt")
	testutil.WriteFile(t, file, []byte("first\n"))
	env := ownHome(t, t.TempDir())
	e := r.start(env, emacs, "-Q", "--batch", "--eval", `(progn (find-file "`+file+`") (insert "unsaved ") (sleep-for 600))`)
	testutil.WaitFor(t, 30*time.Second, "Emacs to lock the file", func() bool { _, err := os.Lstat(lock); return err == nil || e.done() })
	if e.done() {
		t.Fatalf("emacs exited: %s", e.errText())
	}
	got := r.judgeOne(lock)
	if got.Verdict != "live" || got.Producer != "emacs" || got.Holder == nil || got.Holder.Pid != int64(e.pid) {
		t.Fatalf("doctor on a running Emacs's lock: %s of %q (%s), want live, pid %d", got.Verdict, got.Producer, got.Reason, e.pid)
	}
	r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", dir)
	if _, err := os.Lstat(lock); err != nil {
		t.Fatalf("--fix removed a running Emacs's lock: %v", err)
	}
	r.killTree(e.pid)
	if got := r.judgeOne(lock); got.Verdict != "gone" {
		t.Fatalf("doctor on a SIGKILLed Emacs's lock: %s (%s), want gone", got.Verdict, got.Reason)
	}
	r.mustLockctl(0, "doctor", "--fix", dir)
	if _, err := os.Lstat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--fix left a SIGKILLed Emacs's lock (%v)", err)
	}
	ed := r.start(env, emacs, "-Q", "--batch", "--eval", `(progn (find-file "`+file+`") (insert "again ") (save-buffer) (kill-emacs 0))`)
	if code := ed.wait(60 * time.Second); code != 0 || strings.Contains(ed.outText()+ed.errText(), "lock") {
		t.Errorf("Emacs after --fix: exit %d\n%s%s", code, ed.outText(), ed.errText())
	}
	if b := lcRead(t, file); !strings.HasPrefix(b, "again ") {
		t.Errorf("Emacs after --fix saved %q", b)
	}
}

// browser is how one browser is started headless on a profile of its own.
type browser struct {
	name, producer, lock string
	args                 func(profile string) []string
	env                  []string
}

var browsers = []browser{
	{
		name: "chromium", producer: "chromium", lock: "SingletonLock",
		// The flags keep it off this machine's closed network
		// (/work/.library/env/machines/go.md).
		args: func(p string) []string {
			return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
				"--disable-background-networking", "--disable-component-update", "--disable-sync",
				"--remote-debugging-port=0", "--user-data-dir=" + p, "about:blank"}
		},
	},
	{
		name: "firefox-esr", producer: "firefox", lock: "lock",
		args: func(p string) []string { return []string{"--headless", "--no-remote", "--profile", p, "about:blank"} },
		env:  []string{"MOZ_HEADLESS=1"},
	},
}

// TestBrowserLocks: a real Chromium holds its profile's SingletonLock, and
// a real Firefox its profile's lock, symbolic links naming host and pid:
// live while the browser runs (--fix leaves them), gone once it is
// SIGKILLed, removed by --fix, after which the browser starts on the
// profile again and locks it with its new pid.
func TestBrowserLocks(t *testing.T) {
	for _, b := range browsers {
		t.Run(b.name, func(t *testing.T) {
			bin, err := exec.LookPath(b.name)
			if err != nil {
				t.Skipf("%s is not installed", b.name)
			}
			r := lcNewReaper(t)
			home := t.TempDir()
			profile := filepath.Join(home, "profile")
			testutil.Mkdir(t, profile)
			lock := filepath.Join(profile, b.lock)
			// Everything a browser writes besides its profile (caches,
			// config, its temporary files) goes under home too.
			env := append(ownHome(t, home), b.env...)
			start := func() *lcProc {
				t.Helper()
				p := r.start(env, append([]string{bin}, b.args(profile)...)...)
				testutil.WaitFor(t, 60*time.Second, b.name+" to lock its profile", func() bool {
					target, err := os.Readlink(lock)
					pid := strconv.Itoa(p.pid)
					return err == nil && (strings.HasSuffix(target, ":+"+pid) || strings.HasSuffix(target, "-"+pid)) || p.done()
				})
				if p.done() {
					t.Fatalf("%s exited: %s", b.name, p.errText())
				}
				return p
			}
			p := start()
			got := r.judgeOne(lock)
			if got.Verdict != "live" || got.Producer != b.producer || got.Holder == nil || got.Holder.Pid != int64(p.pid) {
				t.Fatalf("doctor on a running %s's lock: %s of %q (%s), want live, pid %d", b.name, got.Verdict, got.Producer, got.Reason, p.pid)
			}
			r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", profile)
			if _, err := os.Lstat(lock); err != nil {
				t.Fatalf("--fix removed a running %s's lock: %v", b.name, err)
			}
			parent := filepath.Join(profile, ".parentlock")
			if b.producer == "firefox" {
				// Firefox also holds an fcntl lock on .parentlock: a
				// kernel-lock file, live while it runs and free after.
				if got := r.judgeOne(parent); got.Verdict != "live" || got.Producer != "firefox" || got.Holder == nil || got.Holder.Pid != int64(p.pid) {
					t.Errorf("doctor on a running Firefox's .parentlock: %s of %q (%s), want live, pid %d", got.Verdict, got.Producer, got.Reason, p.pid)
				}
			}
			r.killTree(p.pid)
			if b.producer == "firefox" {
				if got := r.judgeOne(parent); got.Verdict != "free" {
					t.Errorf("doctor on a SIGKILLed Firefox's .parentlock: %s (%s), want free", got.Verdict, got.Reason)
				}
			}
			if got := r.judgeOne(lock); got.Verdict != "gone" {
				t.Fatalf("doctor on a SIGKILLed %s's lock: %s (%s), want gone", b.name, got.Verdict, got.Reason)
			}
			r.mustLockctl(0, "doctor", "--fix", profile)
			if _, err := os.Lstat(lock); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("--fix left a SIGKILLed %s's lock (%v)", b.name, err)
			}
			again := start()
			if got := r.judgeOne(lock); got.Verdict != "live" || got.Holder == nil || got.Holder.Pid != int64(again.pid) {
				t.Errorf("doctor on %s started again: %s (%s), want live, pid %d", b.name, got.Verdict, got.Reason, again.pid)
			}
			r.killTree(again.pid)
		})
	}
}

// nodePackages are the npm packages the Node.js tests lock with, at the
// versions whose source docs/formats.md cites.
var nodePackages = []string{"proper-lockfile@4.1.2", "lockfile@1.0.4"}

// npmInstallTimeout bounds the one npm install of nodePackages.
const npmInstallTimeout = 2 * time.Minute

// nodeModules returns a node_modules directory holding nodePackages,
// installed once with npm into the user's cache directory (the registry is
// reached only the first time); the test is skipped, with the reason, where
// Node.js, npm or the registry is not there, and fails instead under CI.
func nodeModules(t *testing.T) (node, modules string) {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("Node.js is not installed")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		skip("npm is not installed")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		skip("no cache directory for the npm packages: %v", err)
	}
	dir := filepath.Join(cache, "lockctl-e2e", "npm-"+strings.NewReplacer("@", "-", ".", "_").Replace(strings.Join(nodePackages, "+")))
	modules = filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, ".package-lock.json")); err == nil {
		return node, modules
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		skip("%v", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		skip("%v", err)
	}
	defer os.RemoveAll(tmp)
	// One try, each fetch bounded, the whole install too: an unreachable
	// registry is said within seconds, not after npm's retries (two
	// 5-minute fetch timeouts). npm's own cache is beside the packages,
	// and its HOME and TMPDIR are the test's.
	ctx, cancel := context.WithTimeout(context.Background(), npmInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, append([]string{"install", "--prefix", tmp, "--no-audit", "--no-fund", "--no-save", "--loglevel", "error",
		"--fetch-timeout=30000", "--fetch-retries=0", "--cache", filepath.Join(filepath.Dir(dir), "npm-cache")}, nodePackages...)...)
	cmd.Env = os.Environ()
	for _, kv := range ownHome(t, t.TempDir()) {
		name, value, _ := strings.Cut(kv, "=")
		cmd.Env = testutil.SetEnv(cmd.Env, name, value)
	}
	cmd.WaitDelay = testutil.KillWait
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("not done within %s: %w", npmInstallTimeout, err)
		}
		skip("npm install %s failed; is the npm registry reachable from here? (outside CI this skips; with CI set it fails): %v\n%s", strings.Join(nodePackages, " "), err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) && !os.IsExist(err) {
		if _, serr := os.Stat(modules); serr != nil {
			skip("%v", err)
		}
	}
	return node, modules
}

// nodeHolder is a Node.js program that takes a lock with one of the npm
// packages, says so by creating the file ready, and then either holds it
// until killed or releases it and exits 0.
const nodeHolder = `
const [pkg, file, ready, hold] = process.argv.slice(2);
const fs = require('fs');
const done = (release) => {
  fs.writeFileSync(ready, '');
  if (hold === 'hold') { setInterval(() => {}, 1 << 30); return; }
  release();
};
if (pkg === 'proper-lockfile') {
  require('proper-lockfile').lock(file).then((release) => done(() => release().then(() => process.exit(0))),
    (err) => { console.error(err.message); process.exit(3); });
} else {
  const lockfile = require('lockfile');
  lockfile.lock(file, {}, (err) => {
    if (err) { console.error(err.message); process.exit(3); }
    done(() => lockfile.unlock(file, () => process.exit(0)));
  });
}
`

// TestNodeLocks: npm's proper-lockfile locks <file> by an empty <file>.lock
// directory whose mtime its holder refreshes every few seconds: doctor
// finds it with no --name and, refreshed, calls it live (--fix
// --legacy-older-than leaves it); once its holder is SIGKILLed and the
// refreshes stop, it stays owner-less, never gone (the stale interval is
// the holder's option, not recorded), until --legacy-older-than sweeps it,
// after which proper-lockfile takes it again. npm's lockfile leaves an
// empty file with no descriptor open: owner-less, live or not, which only
// --legacy-older-than sweeps, as lockfile's own stale option would.
func TestNodeLocks(t *testing.T) {
	node, modules := nodeModules(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "holder.js")
	testutil.WriteFile(t, script, []byte(nodeHolder))
	env := append(ownHome(t, t.TempDir()), "NODE_PATH="+modules)
	take := func(r *lcReaper, pkg, file, hold string) *lcProc {
		t.Helper()
		ready := filepath.Join(t.TempDir(), "ready")
		p := r.start(env, node, script, pkg, file, ready, hold)
		testutil.WaitFor(t, 30*time.Second, pkg+" to take its lock", func() bool { return lcExists(ready) || p.done() })
		if hold == "hold" && p.done() {
			t.Fatalf("%s holder exited: %s", pkg, p.errText())
		}
		return p
	}
	back := func(path string, d time.Duration) {
		t.Helper()
		then := time.Now().Add(-d)
		if err := os.Chtimes(path, then, then); err != nil {
			t.Fatal(err)
		}
	}

	// sweep runs --fix --legacy-older-than 30s on a lock unchanged for a
	// minute whose holder is gone: it removes it only after a complete look
	// at every process's open files, and where root cannot have one (a pid
	// 1 that hides its descriptors, as on some sandboxes) it must keep it.
	sweep := func(r *lcReaper, lock string) bool {
		t.Helper()
		res := r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "30s", lock)
		if hidden := testutil.HiddenFromRoot(); os.Geteuid() != 0 || len(hidden) > 0 {
			if !lcExists(lock) {
				t.Fatalf("--legacy-older-than swept %s although not every process's files can be seen here (%v)", lock, hidden)
			}
			t.Logf("not swept, as it must not be: processes %v hide their open files here", hidden)
			return false
		}
		if res.code != 0 || lcExists(lock) {
			t.Fatalf("--fix --legacy-older-than 30s left %s, unchanged for a minute, its holder gone: exit %d\n%s%s", lock, res.code, res.stdout, res.stderr)
		}
		return true
	}

	t.Run("proper-lockfile", func(t *testing.T) {
		r := lcNewReaper(t)
		file := filepath.Join(dir, "db.json")
		testutil.WriteFile(t, file, []byte("{}\n"))
		lock := file + ".lock"
		p := take(r, "proper-lockfile", file, "hold")
		if got := r.judgeOne(lock); got.Verdict != "live" || got.Producer != "proper-lockfile" || !strings.Contains(got.Reason, "refreshed") {
			t.Fatalf("doctor on a held proper-lockfile lock: %s of %q (%s), want live, refreshed", got.Verdict, got.Producer, got.Reason)
		}
		r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", dir)
		if !lcExists(lock) {
			t.Fatal("--fix --legacy-older-than removed a held proper-lockfile lock")
		}
		r.killTree(p.pid)
		back(lock, time.Minute) // as if a minute had passed with no refresh
		if got := r.judgeOne(lock); got.Verdict != "ownerless" || got.Producer != "proper-lockfile" {
			t.Fatalf("doctor on an unrefreshed proper-lockfile lock: %s of %q (%s), want ownerless", got.Verdict, got.Producer, got.Reason)
		}
		r.lockctl(nil, "doctor", "--fix", dir)
		if !lcExists(lock) {
			t.Fatal("--fix without --legacy-older-than removed an owner-less proper-lockfile lock")
		}
		sweep(r, lock)
		// Swept or not, proper-lockfile takes it (its own rule: stale
		// after 10 s).
		if q := take(r, "proper-lockfile", file, "release"); q.wait(30*time.Second) != 0 {
			t.Errorf("proper-lockfile after --fix: %s", q.errText())
		}
	})

	t.Run("lockfile", func(t *testing.T) {
		r := lcNewReaper(t)
		lock := filepath.Join(dir, "npm.lock")
		p := take(r, "lockfile", lock, "hold")
		if got := r.judgeOne(lock); got.Verdict != "ownerless" {
			t.Fatalf("doctor on a held npm lockfile: %s (%s), want ownerless", got.Verdict, got.Reason)
		}
		r.lockctl(nil, "doctor", "--fix", dir)
		if !lcExists(lock) {
			t.Fatal("--fix without --legacy-older-than removed an npm lockfile")
		}
		r.killTree(p.pid)
		back(lock, time.Minute)
		if !sweep(r, lock) {
			return
		}
		if q := take(r, "lockfile", lock, "release"); q.wait(30*time.Second) != 0 {
			t.Errorf("lockfile after --fix: %s", q.errText())
		}
	})
}

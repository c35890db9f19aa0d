//go:build linux

package e2e

import (
	"encoding/json"
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

// TestGitLockWhileCommitting: git commit -a keeps index.lock, and no descriptor of
// it, while a commit waits in its editor. doctor says live, naming that
// git; --fix, even with --legacy-older-than, leaves it; and the commit,
// once its editor returns, writes its index and succeeds. Killed, git
// leaves the lock behind, which is never read as gone: owner-less once no
// git works in the repository (or unknown, where not every process can be
// seen), and git works again once it is removed.
func TestGitLockWhileCommitting(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	r := lcNewReaper(t)
	work := t.TempDir()
	repo, ready, release := filepath.Join(work, "repo"), filepath.Join(work, "ready"), filepath.Join(work, "release")
	editor := filepath.Join(work, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\n: >"+ready+"\nwhile [ ! -e "+release+" ]; do sleep 0.05; done\necho message >\"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Every child goes through the reaper, which would steal exec.Cmd's.
	env := append(ownHome(t, t.TempDir()), "GIT_EDITOR="+editor)
	gitArgs := func(args ...string) []string {
		return append([]string{git, "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)
	}
	mustRun := func(args ...string) {
		t.Helper()
		if p := r.start(env, args...); p.wait(60*time.Second) != 0 {
			t.Fatalf("%v: %s", args, p.errText())
		}
	}
	mustRun(git, "init", "-q", repo)
	mustRun(gitArgs("commit", "-q", "--allow-empty", "-m", "one")...)
	if err := os.WriteFile(filepath.Join(repo, "f"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(gitArgs("add", "f")...)
	commit := r.start(env, gitArgs("commit", "-q", "-a")...)
	testutil.WaitFor(t, 20*time.Second, "git commit to open its editor", func() bool { return lcExists(ready) || commit.done() })
	if commit.done() {
		t.Fatalf("git commit: %s", commit.errText())
	}
	lock := filepath.Join(repo, ".git", "index.lock")
	got := r.judgeOne(lock)
	if got.Verdict != "live" || !strings.Contains(got.Reason, "git process pid "+strconv.Itoa(commit.pid)) {
		t.Fatalf("doctor on index.lock while git commit waits in its editor: %s (%s), want live naming pid %d", got.Verdict, got.Reason, commit.pid)
	}
	before := testutil.Snapshot(t, filepath.Join(repo, ".git"))
	r.mustLockctl(0, "doctor", "--fix", "--legacy-older-than", "1ns", repo)
	testutil.SameTree(t, filepath.Join(repo, ".git"), before)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := commit.wait(30 * time.Second); code != 0 {
		t.Fatalf("git commit, its lock left alone: exit %d\n%s", code, commit.errText())
	}
	if lcExists(lock) {
		t.Fatal("git commit finished, but index.lock is still there")
	}

	// Killed in its editor: the lock stays, and is never gone.
	os.Remove(ready)
	os.Remove(release)
	if err := os.WriteFile(filepath.Join(repo, "f"), []byte("y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commit = r.start(env, gitArgs("commit", "-q", "-a")...)
	testutil.WaitFor(t, 20*time.Second, "git commit to open its editor", func() bool { return lcExists(ready) || commit.done() })
	editors := lcChildren(commit.pid)
	commit.kill()
	for _, e := range editors {
		r.killPid(e)
	}
	if !lcExists(lock) {
		t.Fatal("a SIGKILLed git commit left no index.lock: nothing to test")
	}
	got = r.judgeOne(lock)
	if got.Verdict != "ownerless" && got.Verdict != "unknown" {
		t.Fatalf("doctor on a killed git's index.lock: %s (%s), want ownerless (or unknown where the look is incomplete)", got.Verdict, got.Reason)
	}
	res := r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", repo)
	if lcExists(lock) {
		t.Logf("not swept (the look is incomplete here): %s", res.stdout)
		if err := os.Remove(lock); err != nil { // git's own advice
			t.Fatal(err)
		}
	}
	mustRun(gitArgs("commit", "-q", "-a", "-m", "two")...)
}

// TestPostgresOrphanBackends: a PostgreSQL cluster whose postmaster was
// SIGKILLed while its children still run (stopped here, so that they cannot
// notice its death and exit) keeps its shared memory attached: doctor says
// its postmaster.pid is live, and --fix leaves it. Once they are gone too
// it is gone, --fix removes it, and PostgreSQL starts again.
func TestPostgresOrphanBackends(t *testing.T) {
	initdb, pgctl := pgTool("initdb"), pgTool("pg_ctl")
	if initdb == "" || pgctl == "" {
		t.Skip("PostgreSQL (initdb, pg_ctl) is not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run PostgreSQL as its own user")
	}
	u, err := lookupUser("postgres")
	if err != nil {
		t.Skip("no postgres user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	r := lcNewReaper(t)
	base, err := os.MkdirTemp("", "lockctl-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chown(base, uid, gid); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(base, "data")
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	// As the postgres user, through the reaper (which would steal
	// exec.Cmd's children), in a directory that user may enter.
	asPG := func(args ...string) {
		t.Helper()
		p := r.start(nil, append([]string{setpriv, "--reuid=" + u.Uid, "--regid=" + u.Gid, "--clear-groups", "/usr/bin/env", "-C", base}, args...)...)
		if p.wait(120*time.Second) != 0 {
			log, _ := os.ReadFile(filepath.Join(base, "log"))
			t.Fatalf("%v: %s%s\n%s", args, p.outText(), p.errText(), log)
		}
	}
	asPG(initdb, "-D", data, "-A", "trust", "-U", "postgres")
	port := strconv.Itoa(40000 + os.Getpid()%20000)
	start := func() {
		t.Helper()
		asPG(pgctl, "-D", data, "-w", "-l", filepath.Join(base, "log"), "-o", "-k "+base+" -p "+port+" -c listen_addresses='' -c dynamic_shared_memory_type=mmap", "start")
	}
	start()
	pidFile := filepath.Join(data, "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	postmaster, _ := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	t.Cleanup(func() {
		for _, c := range lcChildren(postmaster) {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
		_ = syscall.Kill(postmaster, syscall.SIGKILL)
	})
	if got := r.judgeOne(pidFile); got.Verdict != "live" || got.Holder == nil || got.Holder.Pid != int64(postmaster) {
		t.Fatalf("doctor on a running cluster: %s (%s), want live, pid %d", got.Verdict, got.Reason, postmaster)
	}
	kids := lcChildren(postmaster)
	for _, c := range kids {
		_ = syscall.Kill(c, syscall.SIGSTOP)
	}
	_ = syscall.Kill(postmaster, syscall.SIGKILL)
	testutil.WaitFor(t, 10*time.Second, "the postmaster to die", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(postmaster) + "/stat")
		return err != nil || strings.Contains(string(b), ") Z ")
	})
	got := r.judgeOne(pidFile)
	if got.Verdict != "live" && got.Verdict != "unknown" {
		t.Fatalf("doctor with the postmaster gone and %d children still attached: %s (%s), want live", len(kids), got.Verdict, got.Reason)
	}
	// Marked for removal (ipcrm -m, as an operator cleaning up would),
	// the segment reads key 0 while the backends stay attached: it is
	// still the cluster's, and held (issue 41, item 3).
	lines := strings.Split(string(b), "\n")
	if f := strings.Fields(lines[min(6, len(lines)-1)]); len(f) == 2 {
		if out, err := exec.Command("ipcrm", "-m", f[1]).CombinedOutput(); err != nil {
			t.Fatalf("ipcrm -m %s: %v: %s", f[1], err, out)
		}
		if got := r.judgeOne(pidFile); got.Verdict != "live" {
			t.Fatalf("doctor with the segment marked for removal and %d children attached: %s (%s), want live", len(kids), got.Verdict, got.Reason)
		}
	} else {
		t.Fatalf("postmaster.pid's line 7 is %q, not a key and an id", lines[min(6, len(lines)-1)])
	}
	before := testutil.Snapshot(t, data)
	r.lockctl(nil, "doctor", "--fix", data)
	if !lcExists(pidFile) {
		t.Fatal("--fix removed postmaster.pid while the cluster's backends were attached to its shared memory")
	}
	_ = before
	for _, c := range kids {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	testutil.WaitFor(t, 10*time.Second, "the backends to die", func() bool {
		for _, c := range kids {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(c) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
				return false
			}
		}
		return true
	})
	// The segment, marked for removal, went with its last backend: its
	// id is no segment now, which proves it gone only where every IPC
	// namespace can be seen (not where pid 1 hides its own).
	switch got := r.judgeOne(pidFile); {
	case got.Verdict == "gone":
		r.mustLockctl(0, "doctor", "--fix", data)
		if lcExists(pidFile) {
			t.Fatal("--fix left a gone postmaster.pid")
		}
	case got.Verdict == "unknown" && strings.Contains(got.Reason, "another IPC namespace"):
		t.Logf("not gone here (the IPC namespaces cannot all be seen): %s", got.Reason)
		if err := os.Remove(pidFile); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("doctor once every process of the cluster is gone: %s (%s), want gone", got.Verdict, got.Reason)
	}
	start()
	// The cluster started again runs as a daemon: stop it here, not by
	// the reaper's last sweep.
	asPG(pgctl, "-D", data, "-m", "immediate", "stop")
}

// judgeOne runs lockctl doctor --json on the lock at path, named as the
// lock itself, and returns its judgement.
func (r *lcReaper) judgeOne(path string) lcLock {
	r.t.Helper()
	res := r.lockctl(nil, "doctor", "--json", path)
	var doc lcDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || len(doc.Locks) != 1 {
		r.t.Fatalf("lockctl doctor --json %s: exit %d, %v\n%s\n%s", path, res.code, err, res.stdout, res.stderr)
	}
	return doc.Locks[0]
}

// TestMercurialLocks: a real hg commit waiting in its editor holds
// .hg/wlock and .hg/store/lock, symbolic links to "<host>/<ns>:<pid>":
// doctor finds them with no --name and says live, and --fix leaves them.
// SIGKILLed, hg leaves both behind: gone, --fix removes them, and hg
// commits again by itself.
func TestMercurialLocks(t *testing.T) {
	hg, err := exec.LookPath("hg")
	if err != nil {
		t.Skip("Mercurial (hg) is not installed")
	}
	r := lcNewReaper(t)
	work := t.TempDir()
	repo, ready := filepath.Join(work, "repo"), filepath.Join(work, "ready")
	editor := filepath.Join(work, "editor.sh")
	testutil.WriteFile(t, editor, []byte("#!/bin/sh\n: >"+ready+"\nexec sleep 600\n"))
	if err := os.Chmod(editor, 0o755); err != nil {
		t.Fatal(err)
	}
	// hg writes its commit message to $TMPDIR/hg-editor-*.commit.hg.txt
	// for the editor, and a SIGKILLed hg leaves it: here, not in /tmp.
	env := append(ownHome(t, t.TempDir()), "HGEDITOR="+editor, "HGUSER=t", "HGPLAIN=1")
	mustRun := func(args ...string) {
		t.Helper()
		if p := r.start(env, args...); p.wait(60*time.Second) != 0 {
			t.Fatalf("%v: %s%s", args, p.outText(), p.errText())
		}
	}
	mustRun(hg, "init", repo)
	testutil.WriteFile(t, filepath.Join(repo, "f"), []byte("x\n"))
	mustRun(hg, "-R", repo, "add", "-q", filepath.Join(repo, "f"))
	commit := r.start(env, hg, "-R", repo, "commit")
	testutil.WaitFor(t, 30*time.Second, "hg commit to open its editor", func() bool { return lcExists(ready) || commit.done() })
	if commit.done() {
		t.Fatalf("hg commit: %s%s", commit.outText(), commit.errText())
	}
	locks := []string{filepath.Join(repo, ".hg", "wlock"), filepath.Join(repo, ".hg", "store", "lock")}
	seen := 0
	for _, l := range locks {
		if _, err := os.Lstat(l); err != nil {
			continue // this hg takes only the wlock before the editor
		}
		seen++
		if got := r.judgeOne(l); got.Verdict != "live" || got.Producer != "mercurial" || got.Holder == nil || got.Holder.Pid != int64(commit.pid) {
			t.Errorf("doctor on %s while hg commit waits: %s of %q (%s), want live, pid %d", l, got.Verdict, got.Producer, got.Reason, commit.pid)
		}
	}
	if seen == 0 {
		t.Fatal("hg commit waiting in its editor holds no lock: nothing to test")
	}
	before := testutil.Snapshot(t, filepath.Join(repo, ".hg"))
	r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", repo)
	testutil.SameTree(t, filepath.Join(repo, ".hg"), before)
	editors := lcChildren(commit.pid)
	commit.kill()
	for _, e := range editors {
		r.killPid(e)
	}
	for _, l := range locks {
		if _, err := os.Lstat(l); err == nil {
			if got := r.judgeOne(l); got.Verdict != "gone" {
				t.Errorf("doctor on %s of a SIGKILLed hg: %s (%s), want gone", l, got.Verdict, got.Reason)
			}
		}
	}
	r.mustLockctl(0, "doctor", "--fix", repo)
	for _, l := range locks {
		if _, err := os.Lstat(l); err == nil {
			t.Errorf("--fix left %s of a SIGKILLed hg", l)
		}
	}
	mustRun(hg, "-R", repo, "commit", "-m", "two")
}

// pgTool finds a PostgreSQL program on PATH, or where Debian installs it.
func pgTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	ps, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(ps) == 0 {
		return ""
	}
	return ps[len(ps)-1]
}

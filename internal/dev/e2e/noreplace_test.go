//go:build linux

package e2e

// The real binary on a kernel that refuses renameat2: a seccomp filter
// makes every renameat2 fail with EINVAL, as NFS answers RENAME_NOREPLACE.
// This is the file system where lockctl cannot claim a record without
// risking replacing another, so it must sweep and break nothing, while
// acquire and release still work by their link(2) fallbacks.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/kernel"
	"golang.org/x/sys/unix"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// noRenameat2Env, set in the environment of the test binary, makes
// TestMain run its arguments as a command under the filter instead of
// running tests.
const noRenameat2Env = "LOCKCTL_TEST_NO_RENAMEAT2"

// seccompArch is the AUDIT_ARCH of each GOARCH the filter is written for.
var seccompArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}

// execWithoutRenameat2 installs a seccomp filter on every thread of this
// process that fails renameat2 with EINVAL (and, when the environment says
// "link", linkat with EPERM), checks that it works, and execs args, which
// inherit it. It never returns.
func execWithoutRenameat2(args []string) {
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "no-renameat2: "+format+"\n", a...)
		os.Exit(99)
	}
	arch, ok := seccompArch[runtime.GOARCH]
	if !ok {
		fail("no seccomp architecture for %s", runtime.GOARCH)
	}
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // seccomp_data.arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: arch},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jf: 1, K: unix.SYS_RENAMEAT2},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EINVAL)},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jf: 1, K: unix.SYS_LINKAT},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}, // linkat: see below
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	if os.Getenv(noRenameat2Env) == "link" {
		filter[7].K = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM) // linkat
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		fail("seccomp: %v", e)
	}
	// The filter must be in force: a rename of nothing says EINVAL, not
	// ENOENT.
	if err := unix.Renameat2(unix.AT_FDCWD, "/nonexistent/a", unix.AT_FDCWD, "/nonexistent/b", unix.RENAME_NOREPLACE); err != unix.EINVAL {
		fail("renameat2 still answers %v under the filter", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, noRenameat2Env+"=") {
			env = append(env, kv)
		}
	}
	fail("exec %s: %v", args[0], syscall.Exec(args[0], args, env))
}

// noReplace runs lockctl with args under the filter and waits for it.
func (r *lcReaper) noReplace(args ...string) lcResult {
	r.t.Helper()
	return r.seccomped("1", args...)
}

// seccomped runs lockctl with args under the filter of mode ("1": no
// renameat2; "link": no renameat2 and no linkat) and waits for it.
func (r *lcReaper) seccomped(mode string, args ...string) lcResult {
	r.t.Helper()
	if _, ok := seccompArch[runtime.GOARCH]; !ok {
		r.t.Skipf("the seccomp filter is written for amd64 and arm64, not %s", runtime.GOARCH)
	}
	self, err := os.Executable()
	if err != nil {
		r.t.Fatal(err)
	}
	p := r.start([]string{noRenameat2Env + "=" + mode}, append([]string{self, lcBinary(r.t)}, args...)...)
	code := p.wait(time.Minute)
	res := lcResult{code: code, stdout: p.outText(), stderr: p.errText()}
	if code == 99 {
		r.t.Fatalf("the seccomp wrapper failed: %s", res.stderr)
	}
	return res
}

// gonePid is the pid of a process that has exited and been reaped.
func (r *lcReaper) gonePid() int {
	s := r.sleeper()
	s.kill()
	r.waitGone(s.pid)
	return s.pid
}

// TestFixWithoutNoReplace: where renameat2 is refused (NFS; a seccomp
// filter stands in, since this kernel has no NFS server to mount from),
// doctor --fix sweeps a gone lock file by its claim by link(2), keeps a
// live one byte for byte, and keeps every gone lock directory (generation
// A and B, lockctl's own) untouched, saying why: a directory cannot be
// linked.
func TestFixWithoutNoReplace(t *testing.T) {
	r := lcNewReaper(t)
	host := kernel.LocalHost()
	dir, files := t.TempDir(), t.TempDir()
	gone := r.gonePid()
	// Generation A, generation B, and lockctl's own lock: directories.
	testutil.Mkdir(t, filepath.Join(dir, "a.lock"))
	testutil.WriteFile(t, filepath.Join(dir, "a.lock.holder"), testutil.RecA(gone, host.Name))
	if host.Scope != "" {
		tok := testutil.TokenB(gone, 1)
		testutil.Mkdir(t, filepath.Join(dir, "b.lock"))
		testutil.WriteFile(t, filepath.Join(dir, "b.lock", "holder."+tok), testutil.RecB(tok, gone, host.Name, host.Scope))
	}
	s := r.sleeper()
	r.mustLockctl(0, "acquire", "--holder-pid", strconv.Itoa(s.pid), filepath.Join(dir, "own.lock"))
	s.kill()
	r.waitGone(s.pid)
	// Lock files, in a directory of their own: one gone, one live.
	live := r.sleeper()
	testutil.WriteFile(t, filepath.Join(files, "p.lock"), testutil.FileRec(gone))
	testutil.WriteFile(t, filepath.Join(files, "q.lock"), testutil.FileRec(live.pid))
	before := testutil.Snapshot(t, dir)
	liveBefore := testutil.Snapshot(t, filepath.Join(files))

	res := r.noReplace("doctor", "--fix", "--json", dir, files)
	if res.code != 1 {
		t.Fatalf("doctor --fix: exit %d, want 1 (the directories are still gone)\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	doc := feDecode(t, "doctor --fix", []byte(res.stdout))
	if len(doc.Locks) < 4 {
		t.Fatalf("doctor --fix judged %d locks, want every one: %s", len(doc.Locks), res.stdout)
	}
	for _, l := range doc.Locks {
		switch filepath.Base(l.Path) {
		case "p.lock":
			if l.Verdict != "gone" || l.Action != "removed" {
				t.Errorf("%s: %s, %s (%s), want gone and removed by its claim by link(2)", l.Path, l.Verdict, l.Action, l.ActionReason)
			}
		case "q.lock":
			if l.Verdict != "live" || l.Action != "skipped" {
				t.Errorf("%s: %s, %s (%s), want live and skipped", l.Path, l.Verdict, l.Action, l.ActionReason)
			}
		default:
			if l.Verdict != "gone" || l.Action != "kept" || !strings.Contains(l.ActionReason, "cannot rename without replacing") {
				t.Errorf("%s: %s, %s (%s), want gone and kept because the file system cannot rename without replacing", l.Path, l.Verdict, l.Action, l.ActionReason)
			}
		}
	}
	// A lock directory it cannot claim, doctor --fix may not so much as
	// touch; the live lock file is as it was; of the gone one, nothing is
	// left, not even a claim.
	testutil.Untouched(t, dir, before)
	delete(liveBefore, "p.lock")
	testutil.SameTree(t, files, liveBefore)
}

// TestFixWithoutNoReplaceRacing: sweepers racing over the same gone lock
// files, each claiming by link(2) where renameat2 is refused, remove each
// at most once between them, and never a live one; two that link the same
// lock at once both leave it (three names), so one more run after them
// removes what they left, and then each was removed exactly once.
func TestFixWithoutNoReplaceRacing(t *testing.T) {
	r := lcNewReaper(t)
	if _, ok := seccompArch[runtime.GOARCH]; !ok {
		t.Skipf("the seccomp filter is written for amd64 and arm64, not %s", runtime.GOARCH)
	}
	dir := t.TempDir()
	gone, live := r.gonePid(), r.sleeper()
	const n = 30
	for i := range n {
		testutil.WriteFile(t, filepath.Join(dir, fmt.Sprintf("g%02d.lock", i)), testutil.FileRec(gone))
	}
	testutil.WriteFile(t, filepath.Join(dir, "live.lock"), testutil.FileRec(live.pid))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sweep := func() *lcProc {
		return r.start([]string{noRenameat2Env + "=1"}, self, lcBinary(t), "doctor", "--fix", "--json-lines", "--quiet", dir)
	}
	var ps []*lcProc
	for range 4 {
		ps = append(ps, sweep())
	}
	removed := map[string]int{}
	count := func(i int, p *lcProc) {
		code := p.wait(time.Minute)
		if code == 99 || code > 1 {
			t.Fatalf("sweeper %d: exit %d\n%s", i, code, p.errText())
		}
		for _, line := range strings.Split(strings.TrimSpace(p.outText()), "\n") {
			var jl feLock
			if jsonUnmarshal(line, &jl) != nil || jl.Path == "" {
				continue
			}
			if jl.Action == "removed" {
				removed[filepath.Base(jl.Path)]++
			}
			if jl.Conflict != "" {
				t.Errorf("sweeper %d: %s: conflict at %s (%s)", i, jl.Path, jl.Conflict, jl.ActionReason)
			}
		}
	}
	for i, p := range ps {
		count(i, p)
	}
	for name, k := range removed {
		if k > 1 {
			t.Errorf("%s was removed %d times by racing sweepers, want at most once", name, k)
		}
	}
	count(len(ps), sweep())
	for i := range n {
		if name := fmt.Sprintf("g%02d.lock", i); removed[name] != 1 {
			t.Errorf("%s was removed %d times, want once", name, removed[name])
		}
	}
	if removed["live.lock"] != 0 {
		t.Errorf("the live lock was removed")
	}
	testutil.WantNames(t, dir, "live.lock")
	if got, err := os.ReadFile(filepath.Join(dir, "live.lock")); err != nil || string(got) != string(testutil.FileRec(live.pid)) {
		t.Errorf("the live lock holds %q (%v), want its record as it was", got, err)
	}
}

// TestLockWithoutNoReplace: acquire publishes by mkdir and link, release
// claims by link, run goes through, and a gone holder's lock is not broken:
// acquire times out (75) and leaves it as it was.
func TestLockWithoutNoReplace(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	s := r.sleeper()

	if res := r.noReplace("acquire", "--holder-pid", strconv.Itoa(s.pid), l); res.code != 0 {
		t.Fatalf("acquire: exit %d\n%s", res.code, res.stderr)
	}
	if got := r.doctor(dir)["x.lock"]; got.Verdict != "live" || got.Holder == nil || got.Holder.Pid != int64(s.pid) {
		t.Fatalf("after acquire, the lock is %+v, want live, held by %d", got, s.pid)
	}
	testutil.WantNames(t, dir, "x.lock")
	if res := r.noReplace("release", "--holder-pid", strconv.Itoa(s.pid), l); res.code != 0 {
		t.Fatalf("release: exit %d\n%s", res.code, res.stderr)
	}
	testutil.WantNames(t, dir)

	if res := r.noReplace("run", l, "--", "sh", "-c", "test -f "+l+"/holder"); res.code != 0 {
		t.Fatalf("run: exit %d, want the command's 0 (the lock held while it ran)\n%s", res.code, res.stderr)
	}
	testutil.WantNames(t, dir)

	r.mustLockctl(0, "acquire", "--holder-pid", strconv.Itoa(s.pid), l)
	s.kill()
	r.waitGone(s.pid)
	before := testutil.Snapshot(t, dir)
	res := r.noReplace("acquire", "--timeout", "300ms", l)
	if res.code != cli.ExitTimeout {
		t.Errorf("acquire over a gone holder: exit %d, want %d (cannot break without a no-replace rename)\n%s", res.code, cli.ExitTimeout, res.stderr)
	}
	// Nor may acquire touch the gone holder's lock it cannot break.
	testutil.Untouched(t, dir, before)
}

// TestPublishFailsCleanly: where neither renameat2 nor link works, acquire
// cannot publish, says so, and leaves nothing behind: no empty directory
// standing as an owner-less lock, no build.
func TestPublishFailsCleanly(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	res := r.seccomped("link", "acquire", "--timeout", "5s", filepath.Join(dir, "x.lock"))
	if res.code == 0 || res.code == cli.ExitTimeout {
		t.Errorf("acquire with no way to publish: exit %d, want an error\n%s", res.code, res.stderr)
	}
	testutil.WantNames(t, dir)
}

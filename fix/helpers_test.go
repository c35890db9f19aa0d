//go:build linux

package fix_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Fixtures for the fix tests. Holders (real processes: testutil.Sleeper,
// Gone, Zombie), holder records and tree snapshots come from
// internal/dev/testutil; what is here serves the fix tests alone.

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var localHost = sync.OnceValue(kernel.LocalHost)

// testHost is this machine, boot and pid namespace. Tests that need a
// generation B scope or a host name skip where they cannot be had.
func testHost(t *testing.T) verdict.Host {
	t.Helper()
	h := localHost()
	if h.Name == "" {
		t.Skip("the host name cannot be read")
	}
	if h.Scope == "" {
		t.Skipf("no generation B scope on this host: %v", h.ScopeErr)
	}
	return h
}

// tempDir is t.TempDir with symbolic links resolved, so that it is spelled
// as scan spells the paths it finds.
func tempDir(t *testing.T) string {
	t.Helper()
	return must(filepath.EvalSymlinks(t.TempDir()))
}

// fileRec is testutil.FileRec: a lock file record that --fix claims.
func fileRec(pid int) []byte { return testutil.FileRec(pid) }

// uucpRec is the record of a UUCP lock file: the pid right-aligned in ten
// columns and a newline.
func uucpRec(pid int) []byte { return fmt.Appendf(nil, "%10d\n", pid) }

// mkGenA makes the generation A lock dir/name: the directory, then its
// sibling holder record. It returns the lock's path.
func mkGenA(t *testing.T, dir, name string, rec []byte) string {
	t.Helper()
	lock := filepath.Join(dir, name)
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	if rec != nil {
		testutil.WriteFile(t, lock+".holder", rec)
	}
	return lock
}

// mkGenB makes the generation B lock dir/name holding holder.<tok>.
func mkGenB(t *testing.T, dir, name, tok string, rec []byte) string {
	t.Helper()
	lock := filepath.Join(dir, name)
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(lock, "holder."+tok), rec)
	return lock
}

// mkFile makes the pid lock file dir/name.
func mkFile(t *testing.T, dir, name string, rec []byte) string {
	t.Helper()
	lock := filepath.Join(dir, name)
	testutil.WriteFile(t, lock, rec)
	return lock
}

// judgeAll walks root as doctor does and judges every lock found, against
// the real kernel.
func judgeAll(t *testing.T, root string) map[string]verdict.Result {
	t.Helper()
	m := must(scan.NewMatcher(nil))
	r, err := scan.ResolveRoot(root, m)
	if err != nil {
		t.Fatal(err)
	}
	j := verdict.Judge{Host: localHost(), Probe: kernel.KernelProbe{}}
	out := map[string]verdict.Result{}
	w := scan.Walker{
		Match: m,
		Found: func(l *scan.Lock) { out[l.Path] = j.Judge(l) },
		Warn:  func(err error) { t.Errorf("walk %s: %v", root, err) },
	}
	if err := w.Walk(r); err != nil {
		t.Fatal(err)
	}
	return out
}

// judge returns the judgement of the lock at path, found by walking root,
// and fails the test unless it is want: a fixture that is not what it claims
// to be tests nothing.
func judge(t *testing.T, root, path string, want verdict.Verdict) verdict.Result {
	t.Helper()
	all := judgeAll(t, root)
	res, ok := all[path]
	if !ok {
		var found []string
		for p := range all {
			found = append(found, p)
		}
		t.Fatalf("walking %s did not find %s (found %q)", root, path, found)
	}
	if res.Verdict != want {
		t.Fatalf("fixture: Judge(%s) = %s (%s), want %s", path, res.Verdict, res.Reason, want)
	}
	return res
}

// at returns a Hook that runs do the first time the Fixer reaches step,
// and fails the test at cleanup if it never did.
func at(t *testing.T, step fix.Step, do func(*scan.Lock)) func(fix.Step, *scan.Lock) {
	t.Helper()
	ran := false
	t.Cleanup(func() {
		if !ran {
			t.Errorf("the hook at step %q never ran", step)
		}
	})
	return func(s fix.Step, l *scan.Lock) {
		if s == step && !ran {
			ran = true
			do(l)
		}
	}
}

// names lists the entries under root (relative, sorted), root excluded.
func names(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for p := range testutil.Snapshot(t, root) {
		if p != "." {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// noDebris fails the test if a claim (<lock>.dead.*) is left under root.
func noDebris(t *testing.T, root string) {
	t.Helper()
	for _, p := range names(t, root) {
		if strings.Contains(filepath.Base(p), ".dead.") {
			t.Errorf("claim debris left behind: %s", p)
		}
	}
}

// claims lists the claim files beside lock.
func claims(t *testing.T, lock string) []string {
	t.Helper()
	m, err := filepath.Glob(lock + ".dead.*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// wantFile fails the test unless path is a regular file holding data, and
// (when ino is not 0) is inode ino.
func wantFile(t *testing.T, path string, data []byte, ino uint64) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("want %s holding %q: %v", path, data, err)
		return
	}
	if !fi.Mode().IsRegular() {
		t.Errorf("%s is a %v, want a regular file", path, fi.Mode().Type())
		return
	}
	if got := must(os.ReadFile(path)); string(got) != string(data) {
		t.Errorf("%s holds %q, want %q", path, got, data)
	}
	if got := inode(t, path); ino != 0 && got != ino {
		t.Errorf("%s is inode %d, want %d", path, got, ino)
	}
}

// inode is the inode number of path, not following a symbolic link.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// replaceFile puts data at path through a new file renamed over it, as an
// acquirer that writes a temporary file and renames it does. It returns the
// new inode.
func replaceFile(t *testing.T, path string, data []byte) uint64 {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "new")
	testutil.WriteFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return inode(t, path)
}

// runningProbe says every pid is running, with no start time: the answer
// the kernel would give had the holder come back to life.
type runningProbe struct{}

func (runningProbe) Probe(int) verdict.Proc {
	return verdict.Proc{State: verdict.StateRunning, Comm: "revenant"}
}

func wantOutcome(t *testing.T, path string, got fix.Outcome, want fix.Action, reason string) {
	t.Helper()
	if got.Action != want || !strings.Contains(got.Reason, reason) {
		t.Errorf("Fix(%s) = %s (%s), want %s (%s)", path, got.Action, got.Reason, want, reason)
	}
}

// seenButHidden is kernel evidence whose look counts as complete when the
// only processes it could not see are testutil.HiddenFromRoot: a test of
// the legacy sweep's own protocol needs a complete look, which no process
// can have on a machine that hides some process's files even from root.
// It answers every other question as the evidence underneath.
type seenButHidden struct{ *kernel.KernelEvidence }

func (e seenButHidden) Holders(dev, ino uint64) ([]verdict.KernelHolder, bool) {
	hs, complete := e.KernelEvidence.Holders(dev, ino)
	unseen, others := e.Unseen()
	return hs, complete || others && testutil.OnlyHidden(unseen)
}

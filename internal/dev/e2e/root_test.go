//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// TestRootOneLockPerTree is issue 20's second "done when": lockctl run
// --root through a subdirectory, a symbolic link and a bind mount of one
// repository never run at once. Each command logs its entry and exit; the
// log must never show two inside.
func TestRootOneLockPerTree(t *testing.T) {
	r := lcNewReaper(t)
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	for _, d := range []string{filepath.Join(repo, ".git"), filepath.Join(repo, "src", "deep"), filepath.Join(base, "bind")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(repo, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	reg := filepath.Join(base, "registry")
	env := []string{"LOCKCTL_REGISTRY=" + reg}
	logf := filepath.Join(base, "sections.log")
	section := fmt.Sprintf(`echo "enter $$" >> %s; sleep 0.02; echo "exit $$" >> %s`, logf, logf)
	names := map[string][]string{
		"subdirectory":   {lcBinary(t), "run", "--root", filepath.Join(repo, "src", "deep"), "--", "sh", "-c", section},
		"symbolic link":  {lcBinary(t), "run", "--root", filepath.Join(base, "link"), "--", "sh", "-c", section},
		"the repository": {lcBinary(t), "run", "--root", repo + "/", "--", "sh", "-c", section},
	}
	if os.Geteuid() == 0 {
		if unshare, err := exec.LookPath("unshare"); err == nil {
			// A bind mount, in a mount namespace of its own: the path
			// differs, the directory does not.
			names["bind mount"] = []string{unshare, "--mount", "--propagation", "private", "sh", "-c",
				fmt.Sprintf(`mount --bind %s %s && exec "$@"`, repo, filepath.Join(base, "bind")), "sh",
				lcBinary(t), "run", "--root", filepath.Join(base, "bind", "src"), "--", "sh", "-c", section}
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for name, args := range names {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 6 {
					p := r.start(env, args...)
					if code := p.wait(60e9); code != 0 {
						mu.Lock()
						failed = append(failed, fmt.Sprintf("%s: exit %d: %s", name, code, p.errText()))
						mu.Unlock()
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("runs failed:\n%s", strings.Join(failed, "\n"))
	}
	enters, violations := checkSections(lcRead(t, logf))
	if want := 12 * len(names); enters != want || len(violations) > 0 {
		t.Fatalf("%d sections entered (want %d); overlaps:\n%s", enters, want, strings.Join(violations, "\n"))
	}
	if _, ok := names["bind mount"]; !ok {
		t.Log("not root or no unshare: the bind mount was not tried")
	}
	// One key, and nothing left once the runs are over.
	testutil.WantNames(t, reg)
	st, err := os.Stat(reg)
	if err != nil || st.Mode()&os.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Errorf("the registry lockctl made is %v, want drwxrwxrwt", st.Mode())
	}
}

// TestRootRefusals: what cannot be keyed is refused with exit 2 and the
// next step, and nothing is made.
func TestRootRefusals(t *testing.T) {
	r := lcNewReaper(t)
	base := t.TempDir()
	plain := filepath.Join(base, "plain")
	repo := filepath.Join(base, "repo")
	for _, d := range []string{filepath.Join(plain, "sub"), filepath.Join(repo, ".hg"), filepath.Join(repo, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	reg := filepath.Join(base, "registry")
	env := []string{"LOCKCTL_REGISTRY=" + reg}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"inside no repository", []string{"run", "--root", filepath.Join(plain, "sub"), "--", "true"}, "--top"},
		{"--top below the repository's top", []string{"run", "--root", filepath.Join(repo, "sub"), "--top", "--", "true"}, "the tree's top"},
		{"--root and LOCK", []string{"acquire", "--root", repo, filepath.Join(base, "x.lock")}, "leave out LOCK"},
		{"--top without --root", []string{"acquire", "--top", filepath.Join(base, "x.lock")}, "goes with --root"},
		{"--root with --kind flock", []string{"run", "--root", repo, "--kind", "flock", "--", "true"}, "directory lock"},
		{"a root that does not exist", []string{"run", "--root", filepath.Join(base, "nothing"), "--", "true"}, "does not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := r.start(env, append([]string{lcBinary(t)}, tt.args...)...)
			if code := p.wait(30e9); code != cli.ExitError || !strings.Contains(p.errText(), tt.want) {
				t.Errorf("lockctl %q: exit %d, want %d saying %q\n%s", tt.args, code, cli.ExitError, tt.want, p.errText())
			}
		})
	}
	// A tree in no repository is keyed by naming its top; an hg
	// repository by its .hg.
	p := r.start(env, lcBinary(t), "run", "--root", plain, "--top", "--", "true")
	if code := p.wait(30e9); code != 0 {
		t.Fatalf("run --root PLAIN --top: exit %d\n%s", code, p.errText())
	}
	p = r.start(env, lcBinary(t), "run", "--root", filepath.Join(repo, "sub"), "--", "true")
	if code := p.wait(30e9); code != 0 {
		t.Fatalf("run --root HG/sub: exit %d\n%s", code, p.errText())
	}
	// A registry that anyone could empty is refused.
	if err := os.Chmod(reg, 0o777); err != nil {
		t.Fatal(err)
	}
	p = r.start(env, lcBinary(t), "run", "--root", repo, "--", "true")
	if code := p.wait(30e9); code != cli.ExitAttention || !strings.Contains(p.errText(), "sticky") {
		t.Errorf("a registry without the sticky bit: exit %d, want %d saying so\n%s", code, cli.ExitAttention, p.errText())
	}
}

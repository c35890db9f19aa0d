package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/internal/fsx"
)

// TestGitWorkersFreshLooksAgain: a doctor run looks at every git process
// once and shares that look among its git locks, but a judgement again
// before a removal (Fresh) looks afresh: a git that started since the
// first look works in the repository, and must be seen.
func TestGitWorkersFreshLooksAgain(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	repo := t.TempDir()
	gitDir := filepath.Join(repo, ".git")
	for _, d := range []string{gitDir, filepath.Join(gitDir, "objects")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(gitDir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	dev, ino, _ := fsx.DevIno(fi)

	once, fresh := &KernelEvidence{}, &KernelEvidence{Fresh: true}
	for _, k := range []*KernelEvidence{once, fresh} {
		if hs, _ := k.GitWorkers(dev, ino); len(hs) != 0 {
			t.Fatalf("git workers before any git runs: %v", hs)
		}
	}
	// A process whose command name starts "git", working in the repository.
	bin := filepath.Join(t.TempDir(), "git-test-worker")
	if err := os.Symlink(sleep, bin); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(bin, "600")
	c.Dir = repo
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })

	hs, _ := fresh.GitWorkers(dev, ino)
	if len(hs) != 1 || hs[0].Pid != c.Process.Pid {
		t.Errorf("a Fresh look after a git started: %v, want pid %d", hs, c.Process.Pid)
	}
	if hs, _ := once.GitWorkers(dev, ino); len(hs) != 0 {
		t.Errorf("the run's shared look, taken before the git started, changed: %v", hs)
	}
}

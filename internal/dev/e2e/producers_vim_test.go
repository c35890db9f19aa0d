//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// TestVimSwap: a real vim's swap file is found with no --name and read from
// its block 0: live while vim runs; once vim is SIGKILLed, gone, and --fix
// removes it, after which vim edits the file again without a word; but a
// swap holding changes never saved is the one copy of that work: reported
// with 'vim -r' as the remedy, and never removed, not even by
// --legacy-older-than.
func TestVimSwap(t *testing.T) {
	vim, err := exec.LookPath("vim")
	if err != nil {
		t.Skip("vim is not installed")
	}
	r := lcNewReaper(t)
	for _, dirty := range []bool{false, true} {
		dir := t.TempDir()
		file, swap := filepath.Join(dir, "notes.txt"), filepath.Join(dir, ".notes.txt.swp")
		testutil.WriteFile(t, file, []byte("first\n"))
		args := []string{vim, "-N", "-u", "NONE", "-i", "NONE", "--not-a-term"}
		if dirty {
			args = append(args, "-c", "normal Aunsaved", "-c", "preserve")
		}
		v := r.start(ownHome(t, t.TempDir()), append(args, "-c", "sleep 600", file)...)
		testutil.WaitFor(t, 20*time.Second, "vim to make its swap file", func() bool { return lcExists(swap) || v.done() })
		if v.done() {
			t.Fatalf("vim exited: %s", v.errText())
		}
		got := r.judgeOne(swap)
		if got.Verdict != "live" || got.Producer != "vim" || got.Holder == nil || got.Holder.Pid != int64(v.pid) {
			t.Fatalf("doctor on a running vim's swap: %s of %q (%s), want live, pid %d", got.Verdict, got.Producer, got.Reason, v.pid)
		}
		v.kill()
		got = r.judgeOne(swap)
		if got.Verdict != "gone" {
			t.Fatalf("doctor on a SIGKILLed vim's swap: %s (%s), want gone", got.Verdict, got.Reason)
		}
		r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", dir)
		if !dirty {
			if lcExists(swap) {
				t.Fatalf("--fix left a gone vim's clean swap file")
			}
			ed := r.start(ownHome(t, t.TempDir()), vim, "-N", "-u", "NONE", "-i", "NONE", "-es", "-c", "wq", file)
			if code := ed.wait(30 * time.Second); code != 0 || strings.Contains(ed.outText()+ed.errText(), "ATTENTION") {
				t.Errorf("vim after --fix: exit %d\n%s%s", code, ed.outText(), ed.errText())
			}
			continue
		}
		if len(got.Remove) != 0 || !strings.Contains(strings.Join(got.Notes, "\n"), "vim -r "+file) {
			t.Errorf("doctor on a swap with unsaved changes: remove %v, notes %q, want no removal and 'vim -r %s'", got.Remove, got.Notes, file)
		}
		if !lcExists(swap) {
			t.Fatalf("--fix removed a swap file holding unsaved changes")
		}
		if b, err := os.ReadFile(swap); err != nil || !strings.Contains(string(b), "unsaved") {
			t.Errorf("the swap no longer holds the unsaved text (%v)", err)
		}
	}
}

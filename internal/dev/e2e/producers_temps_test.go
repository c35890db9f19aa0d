//go:build linux

package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// The producers that link a temporary file to their lock's name leave it
// behind when killed (scan.Temp): doctor shows it with its lock, and
// --fix removes it only once its pid is gone, never a live producer's.

// TestTempsGnuPGTwin: a real gpg holding pubring.kbx.lock (made to wait,
// as in TestGnuPGDotlock) has its .#lk0x<handle>.<node>.<pid> twin (gnupg
// common/dotlock.c, dotlock_create_unix): doctor shows it running, --fix
// keeps lock and twin byte for byte. SIGKILLed, gpg leaves both: gone,
// and --fix removes the lock and its twin; gpg imports again.
func TestTempsGnuPGTwin(t *testing.T) {
	r := lcNewReaper(t)
	h := startHeldGPG(t, r)
	g, home, lock := h.g, h.home, h.lock
	twins, _ := filepath.Glob(filepath.Join(home, fmt.Sprintf(".#lk0x*.%d", g.pid)))
	if len(twins) != 1 {
		t.Fatalf("gpg pid %d holds its lock with twins %q, want one", g.pid, twins)
	}
	twin := twins[0]
	got := r.judgeOne(lock)
	if got.Verdict != "live" || len(got.Temps) != 1 || got.Temps[0].Name != filepath.Base(twin) || got.Temps[0].State != "running" {
		t.Fatalf("doctor on gpg's held dotlock: %s, temps %+v; want live with its twin, running", got.Verdict, got.Temps)
	}
	before, beforeTwin := lcRead(t, lock), lcRead(t, twin)
	r.lockctl(nil, "doctor", "--fix", "--legacy-older-than", "1ns", home)
	if lcReadOr(lock) != before || lcReadOr(twin) != beforeTwin {
		t.Fatalf("--fix touched a live gpg's lock or twin")
	}
	g.kill()
	got = r.judgeOne(lock)
	if got.Verdict != "gone" || len(got.Temps) != 1 || got.Temps[0].State != "gone" {
		t.Fatalf("doctor on a SIGKILLed gpg's dotlock: %s (%s), temps %+v; want gone, its twin gone", got.Verdict, got.Reason, got.Temps)
	}
	res := r.lockctl(nil, "doctor", "--fix", lock)
	if lcExists(lock) || lcExists(twin) {
		t.Fatalf("--fix left lock %v, twin %v:\n%s", lcExists(lock), lcExists(twin), res.stdout)
	}
	h.importAgain()
}

// TestTempsHandMade: the temporaries a killed vipw or X server would
// leave (shadow lib/commonio.c, do_lock_file: "<database>.<pid>" holding
// "<pid>\0"; xorg-server os/utils.c, LockServer: ".tX<n>-lock" holding
// "%10lu\n"), byte for byte, with no lock: doctor shows each as free with
// its temporary, --fix removes those of a gone pid and keeps a running
// one's byte for byte.
func TestTempsHandMade(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	dead := testutil.Gone(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	live := r.start(nil, sleep, "600")
	files := map[string]string{
		fmt.Sprintf("passwd.%d", dead):    fmt.Sprintf("%d\x00", dead),
		fmt.Sprintf("group.%d", live.pid): fmt.Sprintf("%d\x00", live.pid),
		".tX5-lock":                       fmt.Sprintf("%10d\n", dead),
	}
	for n, b := range files {
		testutil.WriteFile(t, filepath.Join(dir, n), []byte(b))
	}
	found := r.found(dir)
	for lock, want := range map[string]string{"passwd.lock": "gone", "group.lock": "running", ".X5-lock": "gone"} {
		got := found[lock]
		if got.Verdict != "free" || got.Kind != "missing" || len(got.Temps) != 1 || got.Temps[0].State != want {
			t.Errorf("doctor: %s %s (%s), temps %+v; want free, missing, its temporary %s", lock, got.Verdict, got.Reason, got.Temps, want)
		}
	}
	r.lockctl(nil, "doctor", "--fix", dir)
	for n, b := range files {
		p := filepath.Join(dir, n)
		if keep := strings.HasPrefix(n, "group."); keep && lcReadOr(p) != b {
			t.Errorf("--fix touched a running producer's temporary %s", n)
		} else if !keep && lcExists(p) {
			t.Errorf("--fix left %s, whose pid %d is gone", n, dead)
		}
	}
	live.kill()
}

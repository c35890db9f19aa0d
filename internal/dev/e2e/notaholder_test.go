//go:build linux

package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// TestNotAHolder: on a machine where some process hides its open files
// even from root (this sandbox's pid 1), an idle flock(1) file reads
// ownerless and fails the check, naming that process; --not-a-holder PID
// vouches for it and the file reads idle, saying so. The vouch never
// touches the kernel's lock table (a held file stays live), refuses a
// lockctl process and a pid that does not run (issue 31, item 6).
func TestNotAHolder(t *testing.T) {
	var hidden []string
	for pid := range testutil.HiddenFromRoot() {
		hidden = append(hidden, strconv.Itoa(pid))
	}
	if len(hidden) == 0 {
		t.Skip("every process's open files are readable here: nothing to vouch for")
	}
	flock := lcFlock(t)
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "cron.lock")
	if p := r.start(nil, flock, l, "true"); p.wait(30*time.Second) != 0 {
		t.Fatal("flock(1) failed")
	}
	got := r.judgeOne(l)
	if got.Verdict != "ownerless" || !strings.Contains(strings.Join(got.Notes, " "), "pid "+hidden[0]+" (") {
		t.Fatalf("an idle flock file, with pid %s's files unreadable: %s, notes %q; want ownerless, naming it", hidden[0], got.Verdict, got.Notes)
	}
	// A vouch for another process completes nothing.
	other := r.sleeper()
	res := r.lockctl(nil, "doctor", "--json", "--not-a-holder", strconv.Itoa(other.pid), l)
	var doc lcDoc
	if err := jsonUnmarshal(res.stdout, &doc); err != nil || len(doc.Locks) != 1 || doc.Locks[0].Verdict != "ownerless" {
		t.Errorf("with --not-a-holder for a process whose files are readable: %s, want ownerless", res.stdout)
	}
	vouch := []string{"doctor", "--json"}
	for _, h := range hidden {
		vouch = append(vouch, "--not-a-holder", h)
	}
	res = r.mustLockctl(cli.ExitOK, append(vouch, l)...)
	if err := jsonUnmarshal(res.stdout, &doc); err != nil || len(doc.Locks) != 1 {
		t.Fatalf("doctor --not-a-holder: %v\n%s", err, res.stdout)
	}
	if g := doc.Locks[0]; g.Verdict != "idle" || !strings.Contains(strings.Join(g.Notes, " "), "only because --not-a-holder vouched") {
		t.Errorf("with --not-a-holder for the hidden processes: %s, notes %q; want idle, saying why", g.Verdict, g.Notes)
	}
	// The lock table is the kernel's word, vouch or not.
	h := r.start(nil, flock, l, "sleep", "60")
	testutil.WaitFor(t, 30*time.Second, "flock(1) to hold it", func() bool { return len(lcChildren(h.pid)) > 0 })
	res = r.lockctl(nil, append(vouch, l)...)
	if err := jsonUnmarshal(res.stdout, &doc); err != nil || len(doc.Locks) != 1 || doc.Locks[0].Verdict != "live" {
		t.Errorf("a held flock file with --not-a-holder: %s, want live", res.stdout)
	}
	r.killTree(h.pid)
	// A lockctl, and a pid that does not run, are never vouched for.
	s := r.sleeper()
	r.mustLockctl(cli.ExitOK, "acquire", "--holder-pid", strconv.Itoa(s.pid), filepath.Join(dir, "x.lock"))
	w := r.start(nil, lcBinary(t), "acquire", "--timeout", "60s", filepath.Join(dir, "x.lock"))
	if !w.awaitStderr("waiting for", 30*time.Second) {
		t.Fatalf("acquire did not wait: %s", w.errText())
	}
	if res := r.lockctl(nil, "doctor", "--not-a-holder", strconv.Itoa(w.pid), dir); res.code != cli.ExitError || !strings.Contains(res.stderr, "lockctl process") {
		t.Errorf("--not-a-holder of a lockctl: exit %d, want %d refusing it\n%s", res.code, cli.ExitError, res.stderr)
	}
	w.kill()
	if res := r.lockctl(nil, "doctor", "--not-a-holder", strconv.Itoa(r.gonePid()), dir); res.code != cli.ExitError {
		t.Errorf("--not-a-holder of a pid that does not run: exit %d, want %d", res.code, cli.ExitError)
	}
}

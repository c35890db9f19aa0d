//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/kernel"
)

// TestLinkLocks: the symbolic-link locks of Mercurial, Emacs, Chromium and
// Firefox (their record is the link's target, read with readlink and never
// followed) are found with no --name and judged by each program's rule,
// from bytes as each program writes them: live while the pid runs, gone
// once it is not, foreign for another host, Mercurial's of another pid
// namespace foreign, Emacs's whose boot time is another boot's recycled.
// --fix removes exactly the gone ones, claim first; a plain file or a
// directory merely called lock is not reported at all.
func TestLinkLocks(t *testing.T) {
	r := lcNewReaper(t)
	host := kernel.LocalHost()
	nsIno := strings.TrimSuffix(strings.TrimPrefix(host.PidNS, "pid:["), "]")
	ino, err := strconv.ParseUint(nsIno, 10, 64)
	if err != nil {
		t.Fatalf("this pid namespace %q", host.PidNS)
	}
	live, gone := r.sleeper().pid, r.gonePid()
	boot := host.BootTime.Unix()
	dir := t.TempDir()
	type lk struct {
		path, target, producer, want string
	}
	locks := []lk{
		{"hg/.hg/wlock", fmt.Sprintf("%s/%x:%d", host.Name, ino, live), "mercurial", "live"},
		{"hg/.hg/store/lock", fmt.Sprintf("%s/%x:%d", host.Name, ino, gone), "mercurial", "gone"},
		{"hg2/.hg/wlock", fmt.Sprintf("%s:%d", host.Name, gone), "mercurial", "gone"}, // no namespace: hg could not read it
		{"hg3/.hg/wlock", fmt.Sprintf("%s/%x:%d", host.Name, ino+1, gone), "mercurial", "foreign"},
		{"hg4/.hg/wlock", fmt.Sprintf("elsewhere/%x:%d", ino, gone), "mercurial", "foreign"},
		{"emacs/.#notes.txt", fmt.Sprintf("ann@%s.%d:%d", host.Name, live, boot), "emacs", "live"},
		{"emacs/.#todo.org", fmt.Sprintf("ann@%s.%d:%d", host.Name, gone, boot), "emacs", "gone"},
		{"emacs/.#old.txt", fmt.Sprintf("ann@%s.%d:%d", host.Name, live, boot-86400), "emacs", "recycled"},
		{"emacs/.#far.txt", fmt.Sprintf("ann@build.example.com.%d", gone), "emacs", "foreign"},
		{"chrome/SingletonLock", fmt.Sprintf("%s-%d", host.Name, gone), "chromium", "gone"},
		{"chrome2/SingletonLock", fmt.Sprintf("%s-%d", host.Name, live), "chromium", "live"},
		{"ff/lock", fmt.Sprintf("127.0.1.1:+%d", gone), "firefox", "gone"},
		{"ff2/lock", fmt.Sprintf("127.0.0.1:+%d", live), "firefox", "live"},
		{"ff3/lock", fmt.Sprintf("203.0.113.9:+%d", gone), "firefox", "foreign"},
	}
	for _, l := range locks {
		p := filepath.Join(dir, l.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(l.target, p); err != nil {
			t.Fatal(err)
		}
	}
	// Not any producer's: a plain empty file, and a registry, called lock.
	testutil.Mkdir(t, filepath.Join(dir, "plain"))
	testutil.WriteFile(t, filepath.Join(dir, "plain", "lock"), nil)
	testutil.Mkdir(t, filepath.Join(dir, "run", "lock"))
	judge := func() map[string]lcLock {
		res := r.lockctl(nil, "doctor", "--json", dir)
		var doc lcDoc
		if err := jsonUnmarshal(res.stdout, &doc); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, res.stdout)
		}
		out := map[string]lcLock{}
		for _, l := range doc.Locks {
			rel, _ := filepath.Rel(dir, l.Path)
			out[rel] = l
		}
		return out
	}
	got := judge()
	for _, l := range locks {
		g, ok := got[l.path]
		if !ok || g.Verdict != l.want || g.Producer != l.producer {
			t.Errorf("%s -> %s: %s of %q (%s), want %s of %s", l.path, l.target, g.Verdict, g.Producer, g.Reason, l.want, l.producer)
		}
	}
	for _, p := range []string{"plain/lock", "run/lock"} {
		if g, ok := got[p]; ok {
			t.Errorf("%s, a producer's name only, is reported: %s (%s)", p, g.Verdict, g.Reason)
		}
	}
	r.lockctl(nil, "doctor", "--fix", dir)
	for _, l := range locks {
		_, err := os.Lstat(filepath.Join(dir, l.path))
		if removed := os.IsNotExist(err); removed != (l.want == "gone") {
			t.Errorf("after --fix, %s (%s) removed: %v, want %v", l.path, l.want, removed, l.want == "gone")
		}
	}
	if left := testutil.Names(t, filepath.Join(dir, "emacs")); len(left) != 3 {
		t.Errorf("after --fix, emacs/ holds %v, want the three locks that are not gone and no claim", left)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestFilelockSoft: Python filelock's SoftFileLock, as _soft.py and
// _identity.py write it: "<pid>\n<host>\n", fenced in newer versions by a
// third line, (boot id << 64) | start time. Judged as filelock judges it:
// live while that very process runs, gone once the pid is gone or runs
// with another start token (a recycled pid) or the boot is another and the
// pid is another process, held (unknown) when the boot is another but that
// very process runs, foreign for another host. --fix removes exactly the gone ones.
func TestFilelockSoft(t *testing.T) {
	r := lcNewReaper(t)
	host := kernel.LocalHost()
	live := r.sleeper().pid
	gone := r.gonePid()
	start := testutil.StartTicks(live)
	boot, ok := new(big.Int).SetString(strings.ReplaceAll(host.BootID, "-", ""), 16)
	if !ok {
		t.Fatalf("boot id %q", host.BootID)
	}
	token := func(b *big.Int, s uint64) string {
		return new(big.Int).Or(new(big.Int).Lsh(b, 64), new(big.Int).SetUint64(s)).String()
	}
	dir := t.TempDir()
	files := map[string]struct{ body, want string }{
		"live.lock":     {fmt.Sprintf("%d\n%s\n%s\n", live, host.Name, token(boot, start)), "live"},
		"plain.lock":    {fmt.Sprintf("%d\n%s\n", live, host.Name), "live"},
		"gone.lock":     {fmt.Sprintf("%d\n%s\n", gone, host.Name), "gone"},
		"recycled.lock": {fmt.Sprintf("%d\n%s\n%s\n", live, host.Name, token(boot, start+7)), "gone"},
		"reboot.lock":   {fmt.Sprintf("%d\n%s\n%s\n", live, host.Name, token(new(big.Int).Add(boot, big.NewInt(1)), start+7)), "gone"},
		// Another boot id, but that very process runs: a boot id is only
		// a file, which its writer's sandbox may have mounted over the
		// kernel's (issue 28, case 4).
		"shadowed.lock": {fmt.Sprintf("%d\n%s\n%s\n", live, host.Name, token(new(big.Int).Add(boot, big.NewInt(1)), start)), "unknown"},
		"far.lock":      {fmt.Sprintf("%d\nbuild-9.example.com\n", gone), "foreign"},
	}
	for name, f := range files {
		testutil.WriteFile(t, filepath.Join(dir, name), []byte(f.body))
	}
	got := r.doctor(dir)
	for name, f := range files {
		if g := got[name]; g.Verdict != f.want || g.Producer != "filelock" {
			t.Errorf("%s %q: %s of %q (%s), want %s of filelock", name, f.body, g.Verdict, g.Producer, g.Reason, f.want)
		}
	}
	r.lockctl(nil, "doctor", "--fix", dir)
	for name, f := range files {
		if removed := !lcExists(filepath.Join(dir, name)); removed != (f.want == "gone") {
			t.Errorf("after --fix, %s (%s) removed: %v", name, f.want, removed)
		}
	}
}

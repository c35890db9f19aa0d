//go:build linux

package remote

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
)

func TestBesideLock(t *testing.T) {
	for _, c := range []struct {
		path, claim string
		ok          bool
	}{
		{"/r/a.lock", "/r/a.lock.dead.12.34", true},
		{"/r/a.lock", "/r/a.lock.dead.tok.12.ns4026531836", true},
		{"/r/a.lock", "/r/a.lock.dead.", false},
		{"/r/a.lock", "/r/b.lock.dead.12.34", false},
		{"/r/a.lock", "/s/a.lock.dead.12.34", false},
		{"/r/a.lock", "/r/sub/a.lock.dead.12.34", false},
		{"/r/a.lock", "/r/../r/a.lock.dead.12.34", false},
		{"/r/a.lock", "r/a.lock.dead.12.34", false},
		{"/r/a.lock", "/r/a.lock", false},
		{"/r/a.lock", "/etc/passwd", false},
		{"/", "/.dead.1", false},
		{"/r/a.lock", "/r/a.lock.dead.1\x00", false},
	} {
		if why := besideLock(c.path, c.claim); (why == "") != c.ok {
			t.Errorf("besideLock(%q, %q) = %q, want ok %v", c.path, c.claim, why, c.ok)
		}
	}
}

// TestJudgeClaimed: the far end judges a claimed record as the lock's own
// (a gnupg dotlock of this host whose holder is gone: gone), and refuses
// (unknown) a claim not beside the lock, not holding the bytes sent, or of
// another format.
func TestJudgeClaimed(t *testing.T) {
	host := judges.Host()
	if host.Name == "" {
		t.Skip("the host name cannot be read")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rec := fmt.Sprintf("%10d\n%s\n", testutil.Gone(t), host.Name)
	lock := filepath.Join(dir, "pubring.kbx.lock")
	claim := lock + ".dead.77.88"
	testutil.WriteFile(t, claim, []byte(rec))
	other := filepath.Join(dir, "other.dead.77.88")
	testutil.WriteFile(t, other, []byte(rec))
	judge := judges.Doctor(host, false)
	for _, c := range []struct {
		name   string
		r      Record
		want   string
		reason string
	}{
		{"gone", Record{Path: lock, Format: "gnupg", Bytes: rec, Claim: claim}, "gone", ""},
		{"other bytes", Record{Path: lock, Format: "gnupg", Bytes: rec + "x", Claim: claim}, "unknown", "not the one sent"},
		{"other format", Record{Path: lock, Format: "filelock", Bytes: rec, Claim: claim}, "unknown", "not filelock"},
		{"not beside", Record{Path: lock, Format: "gnupg", Bytes: rec, Claim: other}, "unknown", "not named as a claim"},
		{"no claim there", Record{Path: lock, Format: "gnupg", Bytes: rec, Claim: lock + ".dead.1.2"}, "unknown", "no claimed record"},
	} {
		got := judgeOne(c.r, judge)
		if got.Verdict != c.want || !strings.Contains(got.Reason, c.reason) || got.Claim != c.r.Claim {
			t.Errorf("%s: judgeOne = %s (%s), claim %q; want %s (%s)", c.name, got.Verdict, got.Reason, got.Claim, c.want, c.reason)
		}
	}
	if _, err := os.Lstat(claim); err != nil {
		t.Errorf("judging a claim touched it: %v", err)
	}
}

func TestSameHost(t *testing.T) {
	v := &Via{}
	v.remember("HostB", &Answer{MachineID: "m", BootID: "b"})
	for _, c := range []struct {
		host, machine, boot string
		ok                  bool
	}{
		{"hostb", "m", "b", true},
		{"hostb", "m2", "b", false},
		{"hostb", "m", "b2", false},
		{"hostc", "m", "b", false},
	} {
		if err := v.sameHost(c.host, &Answer{MachineID: c.machine, BootID: c.boot}); (err == nil) != c.ok {
			t.Errorf("sameHost(%s, %s, %s) = %v, want ok %v", c.host, c.machine, c.boot, err, c.ok)
		}
	}
}

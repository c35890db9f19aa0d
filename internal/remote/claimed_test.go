//go:build linux

package remote

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
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

// TestRejudge: the answer about a claimed record is taken only from the
// host asked, judging the claim sent, with the machine and boot id of that
// host's first answer; anything else, and any failure, is unknown.
func TestRejudge(t *testing.T) {
	dir := t.TempDir()
	l := &scan.Lock{Path: "/r/a.lock", Format: "gnupg"}
	rec := scan.Record{Raw: []byte("      4242\nhostb\n")}
	const claim = "/r/a.lock.dead.1.2"
	answer := func(host, machine, boot, claim, verdict string) string {
		b, _ := json.Marshal(Answer{Version: Version, Host: host, MachineID: machine, BootID: boot,
			Judged: []Judgment{{Path: "/r/a.lock", Claim: claim, Verdict: verdict, Reason: "said so"}}})
		return string(b)
	}
	for _, c := range []struct {
		name, out string
		exit      int
		want      verdict.Verdict
	}{
		{"gone", answer("hostb", "m", "b", claim, "gone"), 0, verdict.Gone},
		{"live", answer("hostb", "m", "b", claim, "live"), 0, verdict.Live},
		{"another host", answer("hostc", "m", "b", claim, "gone"), 0, verdict.Unknown},
		{"another machine", answer("hostb", "m2", "b", claim, "gone"), 0, verdict.Unknown},
		{"booted since", answer("hostb", "m", "b2", claim, "gone"), 0, verdict.Unknown},
		{"another claim", answer("hostb", "m", "b", "/r/a.lock.dead.3.4", "gone"), 0, verdict.Unknown},
		{"no claim", answer("hostb", "m", "b", "", "gone"), 0, verdict.Unknown},
		{"malformed", "{", 0, verdict.Unknown},
		{"unreachable", "", 255, verdict.Unknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			testutil.WriteFile(t, out, []byte(c.out))
			v := &Via{Command: []string{"/bin/sh", "-c", fmt.Sprintf("cat >/dev/null; cat %s; exit %d", out, c.exit), "fake-ssh"}, Timeout: 10 * time.Second}
			v.remember("hostb", &Answer{MachineID: "m", BootID: "b"})
			if got := v.Rejudge("hostb", l, rec, claim); got.Verdict != c.want || got.Remote != "hostb" {
				t.Errorf("Rejudge = %s (%s), remote %q; want %s from hostb", got.Verdict, got.Reason, got.Remote, c.want)
			}
		})
	}
	v := &Via{Command: []string{"/bin/false"}, Timeout: time.Second}
	if got := v.Rejudge("-oProxyCommand=x", l, rec, claim); got.Verdict != verdict.Unknown {
		t.Errorf("Rejudge of a host that is no host name = %s, want unknown", got.Verdict)
	}
}

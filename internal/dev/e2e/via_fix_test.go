//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// fakeSSHFix stands in for ssh as fakeSSH does, with hosts that answer
// doctor --fix --via's second question (about the claimed record)
// otherwise than its first: hoste's second answer comes from hostb, which
// lies that the record is gone; hostf's first answer lies that it is gone
// and its second tells the truth; hostg cannot be reached the second time;
// hosth always answers gone, as a host that cannot see this one's locks
// (another machine on a shared volume) would.
// Each host's calls are counted in the log, one per run.
const fakeSSHFix = `#!/bin/sh
printf '%s\n' "$*" >>"$FAKE_SSH_LOG"
host=$1
shift
n=$(grep -c "^$host " "$FAKE_SSH_LOG")
lie=
case $host in
hostb) t=$HOSTB ;;
hoste) t=$HOSTE; if [ "$n" -gt 1 ]; then t=$HOSTB lie=gone; fi ;;
hostf) t=$HOSTF; if [ "$n" -eq 1 ]; then lie=gone; fi ;;
hosth) t=$HOSTH lie=gone ;;
hostg) t=$HOSTG
	if [ "$n" -gt 1 ]; then echo "ssh: connect to host hostg port 22: Connection refused" >&2; exit 255; fi ;;
*) echo "ssh: Could not resolve hostname $host: Name or service not known" >&2; exit 255 ;;
esac
if [ -n "$lie" ]; then
	nsenter -t "$t" -u -m -- "$@" | sed "s/\"verdict\":\"[a-z]*\"/\"verdict\":\"$lie\"/g"
	exit 0
fi
exec nsenter -t "$t" -u -m -- "$@"
`

// viaHosts starts a "host" (UTS and mount namespaces of its own, as in
// TestDoctorVia) for each name, and returns their init pids by name.
func viaHosts(t *testing.T, r *lcReaper, names ...string) map[string]int {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux)")
	}
	out := map[string]int{}
	for _, name := range names {
		h := r.start(nil, unshare, "--uts", "--mount", "/bin/sh", "-c", "hostname "+name+" && exec sleep 600")
		out[name] = h.pid
		testutil.WaitFor(t, 30*time.Second, name+" to start", func() bool {
			return strings.HasPrefix(lcRead(t, "/proc/"+strconv.Itoa(h.pid)+"/comm"), "sleep") || h.done()
		})
	}
	return out
}

// TestDoctorFixVia: doctor --fix --via removes a lock file recorded on
// another host only by the claim-first protocol, with that host judging
// the claimed record gone again (issue 33): removed when its holder exited
// there; kept untouched when it runs there or the host cannot be reached;
// put back, byte for byte, when the second answer comes from another host,
// says live, or does not come.
func TestDoctorFixVia(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("namespaces need root")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("no nsenter (util-linux)")
	}
	r := lcNewReaper(t)
	files := t.TempDir()
	bin := lcBinary(t)
	ssh := filepath.Join(files, "fake-ssh")
	testutil.WriteFile(t, ssh, []byte(fakeSSHFix))
	if err := os.Chmod(ssh, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := viaHosts(t, r, "hostb", "hoste", "hostf", "hostg", "hosth")
	env := []string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH")}
	for name, pid := range hosts {
		env = append(env, strings.ToUpper(name)+"="+strconv.Itoa(pid))
	}
	// A holder process on host; gone, once killed. (The hosts share this
	// pid namespace: see TestDoctorVia.)
	holder := func(host string, alive bool) int {
		p := r.start(env, nsenter, "-t", strconv.Itoa(hosts[host]), "-u", "-m", "--", "/bin/sleep", "600")
		if !alive {
			r.killPid(p.pid)
			p.wait(30 * time.Second)
		}
		return p.pid
	}
	runs := 0
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// fixVia runs doctor --fix --via on lock; noRename: under the filter
	// that refuses renameat2 (NFS's answer), so that it claims by link(2).
	fixVia := func(lock string, noRename bool) feLock {
		t.Helper()
		runs++
		log := filepath.Join(files, fmt.Sprintf("ssh-%d.log", runs))
		args := []string{bin, "doctor", "--json", "--fix", "--via", ssh, "--via-timeout", "20s", lock}
		runEnv := append(env, "FAKE_SSH_LOG="+log)
		if noRename {
			args = append([]string{self}, args...)
			runEnv = append(runEnv, noRenameat2Env+"=1")
		}
		p := r.start(runEnv, args...)
		code, stdout, stderr := p.wait(time.Minute), p.outText(), p.errText()
		doc := feDecode(t, "doctor --fix --via", []byte(stdout))
		if len(doc.Locks) != 1 || code > 1 {
			t.Fatalf("doctor --fix --via %s: exit %d\n%s\n%s", lock, code, stdout, stderr)
		}
		return doc.Locks[0]
	}
	for _, c := range []struct {
		name, host string
		alive      bool
		verdict    string
		action     string
		why        string // in the action's reason
		untouched  bool   // not even claimed
		noRename   bool   // where renameat2 is refused (NFS): a link claim
	}{
		{"gone there", "hostb", false, "gone", "removed", "judged it again and removed", false, false},
		{"gone there, without renameat2", "hostb", false, "gone", "removed", "judged it again and removed", false, true},
		{"live when asked again, without renameat2", "hostf", true, "gone", "kept", "judged again, the holder is live", false, true},
		{"live there", "hostb", true, "live", "skipped", "removes only gone locks", true, false},
		{"unreachable", "hostc", false, "foreign", "skipped", "removes only gone locks", true, false},
		{"second answer from another host", "hoste", false, "gone", "kept", `comes from host "hostb", not hoste`, false, false},
		{"live when asked again", "hostf", true, "gone", "kept", "judged again, the holder is live", false, false},
		{"unreachable when asked again", "hostg", false, "gone", "kept", "cannot be reached", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			lock := filepath.Join(dir, "pubring.kbx.lock")
			rec := []byte(fmt.Sprintf("%10d\n%s\n", holder(c.host, c.alive), c.host))
			testutil.WriteFile(t, lock, rec)
			before := testutil.Snapshot(t, dir)
			got := fixVia(lock, c.noRename)
			if got.Verdict != c.verdict || got.Action != c.action || !strings.Contains(got.ActionReason, c.why) || got.Conflict != "" {
				t.Errorf("doctor --fix --via on a lock of %s: %s, %s (%s), conflict %q; want %s, %s, saying %q", c.host, got.Verdict, got.Action, got.ActionReason, got.Conflict, c.verdict, c.action, c.why)
			}
			switch {
			case c.action == "removed":
				testutil.WantNames(t, dir)
			case c.untouched:
				testutil.Untouched(t, dir, before)
			default:
				// Claimed, then put back: its name, its inode, its bytes.
				testutil.SameTree(t, dir, before)
				if !strings.Contains(got.ActionReason, "the record was put back") {
					t.Errorf("the lock of %s was not put back: %s", c.host, got.ActionReason)
				}
			}
		})
	}
	// Gone on its host, but a process of this host holds a lock on the
	// file (a shared volume: the far kernel never sees this host's locks,
	// so hosth, which shares this kernel, answers gone as such a host
	// would): claimed, then put back.
	t.Run("gone there, flocked here", func(t *testing.T) {
		dir := t.TempDir()
		lock := filepath.Join(dir, "pubring.kbx.lock")
		testutil.WriteFile(t, lock, []byte(fmt.Sprintf("%10d\nhosth\n", holder("hosth", false))))
		fl := r.start(env, lcFlock(t), "-s", lock, "-c", "echo locked; exec sleep 600")
		testutil.WaitFor(t, 30*time.Second, "flock(1) to lock it", func() bool { return strings.Contains(fl.outText(), "locked") || fl.done() })
		before := testutil.Snapshot(t, dir)
		got := fixVia(lock, false)
		if got.Action != "kept" || !strings.Contains(got.ActionReason, "on this host") || got.Conflict != "" {
			t.Errorf("doctor --fix --via on hosth's gone lock that this host flocks: %s, %s (%s), conflict %q; want kept, held on this host", got.Verdict, got.Action, got.ActionReason, got.Conflict)
		}
		testutil.SameTree(t, dir, before)
	})
}

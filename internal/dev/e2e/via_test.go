//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// fakeSSH stands in for ssh: "fake-ssh HOST CMD...", run as ssh runs it,
// enters the namespaces of the "host" of that name and runs CMD there;
// ssh's exit 255 for a host it does not know. hostd is a host whose
// answers come from hostb (an impersonation). Every call is logged.
const fakeSSH = `#!/bin/sh
printf '%s\n' "$*" >>"$FAKE_SSH_LOG"
host=$1
shift
case $host in
hostb|hostd) t=$HOSTB ;;
*) echo "ssh: Could not resolve hostname $host: Name or service not known" >&2; exit 255 ;;
esac
exec nsenter -t "$t" -u -m -- "$@"
`

// TestDoctorVia: doctor --via judges a foreign lock on the host its record
// names (a second "host" made of UTS and mount namespaces, reached by
// a stand-in for ssh): live while its holder runs there, gone once it has
// exited, and, a pid= file being a format --fix never claims (scan.InPlace),
// never removed from here (TestDoctorFixVia removes lock files of a
// claimed format); an unreachable host, an answer
// from another host and a host name that is an option leave their locks
// foreign, and the last is never passed on (issue 33).
func TestDoctorVia(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("namespaces need root")
	}
	unshare, err1 := exec.LookPath("unshare")
	nsenter, err2 := exec.LookPath("nsenter")
	if err1 != nil || err2 != nil {
		t.Skip("no unshare or nsenter (util-linux)")
	}
	r := lcNewReaper(t)
	dir, files := t.TempDir(), t.TempDir()
	bin := lcBinary(t)
	ssh := filepath.Join(files, "fake-ssh")
	if err := os.WriteFile(ssh, []byte(fakeSSH), 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(files, "ssh.log")
	// hostb has a host name and mounts of its own. Not a pid namespace of
	// its own: a child pid namespace's lock table lists only its own
	// processes' locks, so there, where judge takes nothing, a gone holder
	// reads unknown (the coverage rule of issue 41), as it should.
	hostb := r.start(nil, unshare, "--uts", "--mount", "/bin/sh", "-c", "hostname hostb && exec sleep 600")
	initB := hostb.pid
	testutil.WaitFor(t, 30*time.Second, "hostb to start", func() bool {
		return strings.HasPrefix(lcRead(t, "/proc/"+strconv.Itoa(initB)+"/comm"), "sleep") || hostb.done()
	})
	env := []string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"), "FAKE_SSH_LOG=" + logPath, "HOSTB=" + strconv.Itoa(initB)}

	// A lock recorded on hostb (pid=, host=: the layout many tools write)
	// by a process that runs there. lockctl's own records carry a boot id
	// and a pid namespace, which would let this host judge them itself.
	l := filepath.Join(dir, "b.lock")
	holder := r.start(env, nsenter, "-t", strconv.Itoa(initB), "-u", "-m", "--", "/bin/sleep", "600")
	testutil.WriteFile(t, l, []byte("pid="+strconv.Itoa(holder.pid)+"\nhost=hostb\n"))
	if got := r.judgeOne(l); got.Verdict != "foreign" {
		t.Fatalf("without --via, hostb's lock reads %s (%s), want foreign", got.Verdict, got.Reason)
	}
	via := func(want int, args ...string) lcLock {
		t.Helper()
		res := r.lockctl(env, append([]string{"doctor", "--json", "--via", ssh}, args...)...)
		var doc lcDoc
		if err := jsonUnmarshal(res.stdout, &doc); err != nil || len(doc.Locks) != 1 || res.code != want {
			t.Fatalf("doctor --via %s: exit %d (want %d), %v\n%s\n%s", strings.Join(args, " "), res.code, want, err, res.stdout, res.stderr)
		}
		if asked := "lockctl: asking 1 host through " + ssh + ": "; !strings.Contains(res.stderr, asked) && !strings.Contains(strings.Join(doc.Locks[0].Notes, " "), "not asked") {
			t.Errorf("doctor --via does not say which hosts it asks (%q):\n%s", asked, res.stderr)
		}
		return doc.Locks[0]
	}
	if got := via(cli.ExitOK, l); got.Verdict != "live" || !strings.Contains(got.Reason, "judged on host hostb") {
		t.Errorf("doctor --via on hostb's running holder: %s (%s), want live, judged on hostb", got.Verdict, got.Reason)
	}

	// Its holder exits on hostb: gone there, and --fix here keeps it.
	r.killPid(holder.pid)
	holder.wait(30 * time.Second)
	before := testutil.Snapshot(t, dir)
	if got := via(cli.ExitAttention, l); got.Verdict != "gone" || !strings.Contains(got.Reason, "judged on host hostb") {
		t.Errorf("doctor --via once the holder exited on hostb: %s (%s), want gone", got.Verdict, got.Reason)
	}
	// lockctl judge only reads, and --fix --via keeps a lock of a format
	// it never claims, judged anywhere.
	via(cli.ExitAttention, "--fix", l)
	testutil.SameTree(t, dir, before)

	// Unreachable, impersonated, and hostile hosts.
	for host, want := range map[string]string{
		"hostc":                "cannot be reached",
		"hostd":                `comes from host "hostb", not hostd`,
		"-oProxyCommand=touch": "is not a host name",
	} {
		p := filepath.Join(dir, "h-"+strings.TrimLeft(host, "-")+".lock")
		testutil.WriteFile(t, p, []byte("pid=4242\nhost="+host+"\n"))
		got := via(cli.ExitOK, p)
		if got.Verdict != "foreign" || !strings.Contains(strings.Join(got.Notes, " "), want) {
			t.Errorf("doctor --via on a lock of %s: %s, notes %q; want foreign, saying %q", host, got.Verdict, got.Notes, want)
		}
	}
	if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "ProxyCommand") {
		t.Errorf("a host name that is an option was passed to the --via command:\n%s", b)
	}
}

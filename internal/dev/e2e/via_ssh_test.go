//go:build linux

package e2e

import (
	"bytes"
	"fmt"
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

// TestDoctorViaRealSSH: doctor --via 'ssh -F CONFIG' through a real sshd,
// in a network namespace the test makes, on 127.0.0.1 there, with keys
// made for the test and strict host-key checking; the sshd runs in a UTS
// namespace whose host name is the record's (hostb). A lock recorded on
// hostb for a process that runs reads live; once it has exited, gone; a
// host key that is not the known one leaves the lock foreign (issue 33).
func TestDoctorViaRealSSH(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("namespaces and sshd need root")
	}
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		t.Skip("sshd (openssh-server) is not installed")
	}
	need := map[string]string{}
	for _, tool := range []string{"ssh", "ssh-keygen", "unshare", "nsenter", "ip"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not installed", tool)
		}
		need[tool] = p
	}
	r := lcNewReaper(t)
	dir, files := t.TempDir(), t.TempDir()
	if err := os.Chmod(files, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := lcBinary(t)
	keygen := func(name string) string {
		if out, err := exec.Command(need["ssh-keygen"], "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", filepath.Join(files, name)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
		return strings.TrimSpace(lcRead(t, filepath.Join(files, name+".pub")))
	}
	hostKey, userKey, otherKey := keygen("hostkey"), keygen("userkey"), keygen("otherkey")
	testutil.WriteFile(t, filepath.Join(files, "authorized_keys"), []byte(userKey+"\n"))
	testutil.WriteFile(t, filepath.Join(files, "known_hosts"), []byte("hostb "+hostKey+"\n"))
	testutil.WriteFile(t, filepath.Join(files, "wrong_known_hosts"), []byte("hostb "+otherKey+"\n"))
	testutil.WriteFile(t, filepath.Join(files, "sshd_config"), []byte(fmt.Sprintf(`Port 2222
ListenAddress 127.0.0.1
HostKey %[1]s/hostkey
AuthorizedKeysFile %[1]s/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile none
SetEnv PATH=%[2]s:/usr/sbin:/usr/bin:/sbin:/bin
`, files, filepath.Dir(bin))))
	client := func(known string) string {
		cfg := filepath.Join(files, "ssh_config."+known)
		testutil.WriteFile(t, cfg, []byte(fmt.Sprintf(`Host hostb
  HostName 127.0.0.1
  Port 2222
  User root
  IdentityFile %[1]s/userkey
  IdentitiesOnly yes
  UserKnownHostsFile %[1]s/%[2]s
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  HostKeyAlias hostb
  BatchMode yes
  ConnectTimeout 5
`, files, known)))
		return cfg
	}
	good, wrong := client("known_hosts"), client("wrong_known_hosts")

	// The network: a namespace with its loopback up, held by a sleep.
	net := r.start(nil, need["unshare"], "--net", "/bin/sh", "-c", need["ip"]+" link set lo up && exec sleep 600")
	testutil.WaitFor(t, 30*time.Second, "the network namespace", func() bool {
		return strings.HasPrefix(lcRead(t, "/proc/"+strconv.Itoa(net.pid)+"/comm"), "sleep") || net.done()
	})
	netns := "--net=/proc/" + strconv.Itoa(net.pid) + "/ns/net"
	// hostb: sshd in that network, with a host name and mounts of its own
	// (its privilege separation directory on a tmpfs that dies with it).
	d := r.start(nil, need["nsenter"], netns, "--", need["unshare"], "--uts", "--mount", "/bin/sh", "-c",
		`hostname hostb && mount -t tmpfs tmpfs /run && mkdir -m 755 /run/sshd && exec "$1" -D -e -f "$2"`, "sh", sshd, filepath.Join(files, "sshd_config"))
	testutil.WaitFor(t, 30*time.Second, "sshd to listen", func() bool {
		return strings.Contains(d.errText(), "Server listening") || d.done()
	})
	if d.done() {
		t.Fatalf("sshd ended: %s", d.errText())
	}

	s := r.sleeper()
	l := filepath.Join(dir, "b.lock")
	testutil.WriteFile(t, l, []byte("pid="+strconv.Itoa(s.pid)+"\nhost=hostb\n"))
	doctor := func(cfg string, want int, args ...string) lcLock {
		t.Helper()
		argv := append([]string{need["nsenter"], netns, "--", bin, "doctor", "--json", "--via", need["ssh"] + " -F " + cfg}, args...)
		p := r.start(nil, append(argv, l)...)
		code := p.wait(60 * time.Second)
		var doc lcDoc
		if err := jsonUnmarshal(p.outText(), &doc); err != nil || len(doc.Locks) != 1 || code != want {
			t.Fatalf("doctor --via ssh: exit %d (want %d), %v\n%s\n%s\nsshd: %s", code, want, err, p.outText(), p.errText(), d.errText())
		}
		return doc.Locks[0]
	}
	if got := doctor(good, cli.ExitOK); got.Verdict != "live" || !strings.Contains(got.Reason, "judged on host hostb") {
		t.Errorf("doctor --via ssh on hostb's running holder: %s (%s) %q, want live, judged on hostb", got.Verdict, got.Reason, got.Notes)
	}
	if got := doctor(wrong, cli.ExitOK); got.Verdict != "foreign" || !strings.Contains(strings.Join(got.Notes, " "), "cannot be reached") {
		t.Errorf("doctor --via ssh with a host key that is not hostb's: %s, notes %q; want foreign, unreachable", got.Verdict, got.Notes)
	}
	s.kill()
	r.waitGone(s.pid)
	if got := doctor(good, cli.ExitAttention); got.Verdict != "gone" {
		t.Errorf("doctor --via ssh once hostb's holder exited: %s (%s), want gone", got.Verdict, got.Reason)
	}

	// --fix --via through the same sshd: a GnuPG dotlock of hostb (a
	// format --fix claims) is kept while its gpg runs there, and once it
	// is gone there, claimed here, judged again there, and removed.
	g := r.sleeper()
	l = filepath.Join(dir, "pubring.kbx.lock")
	rec := []byte(fmt.Sprintf("%10d\nhostb\n", g.pid))
	testutil.WriteFile(t, l, rec)
	if got := doctor(good, cli.ExitOK, "--fix"); got.Verdict != "live" || got.Action == "removed" {
		t.Errorf("doctor --fix --via ssh on hostb's running gpg: %s, %s (%s), want live, kept", got.Verdict, got.Action, got.ActionReason)
	}
	if b, err := os.ReadFile(l); err != nil || !bytes.Equal(b, rec) {
		t.Fatalf("the live dotlock changed: %q, %v", b, err)
	}
	g.kill()
	r.waitGone(g.pid)
	if got := doctor(good, cli.ExitOK, "--fix"); got.Verdict != "gone" || got.Action != "removed" {
		t.Errorf("doctor --fix --via ssh once hostb's gpg exited: %s, %s (%s), want gone, removed", got.Verdict, got.Action, got.ActionReason)
	}
	if _, err := os.Lstat(l); !os.IsNotExist(err) {
		t.Errorf("the gone dotlock is still there: %v", err)
	}
	if left, _ := filepath.Glob(l + ".dead.*"); len(left) > 0 {
		t.Errorf("claims left behind: %q", left)
	}
}

//go:build linux

package e2e

import (
	"encoding/json"
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
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/verdict"
)

// shadowBoot is the boot id a mount namespace of these tests sees: a file
// bind-mounted over /proc/sys/kernel/random/boot_id, as some sandboxes
// give each container.
const shadowBoot = "11111111-2222-4333-8444-555555555555"

// shadowed returns a wrapper that runs argv in a new mount namespace (and,
// with pidns, a new pid namespace with its own /proc) where the boot id is
// shadowBoot.
func shadowed(t *testing.T, pidns bool) func(argv ...string) *exec.Cmd {
	t.Helper()
	file := filepath.Join(t.TempDir(), "boot_id")
	testutil.WriteFile(t, file, []byte(shadowBoot+"\n"))
	return func(argv ...string) *exec.Cmd {
		args := []string{"-m"}
		if pidns {
			args = []string{"--pid", "--fork", "--kill-child", "--mount-proc"}
		}
		script := fmt.Sprintf(`mount --bind %s /proc/sys/kernel/random/boot_id && exec "$@"`, file)
		return exec.Command("unshare", append(append(args, "sh", "-c", script, "sh"), argv...)...)
	}
}

// bootDoc is the part of doctor's JSON these tests read.
type bootDoc struct {
	BootID string `json:"boot_id"`
	Locks  []struct{ Path, Verdict, Reason, Action string }
}

func doctorJSON(t *testing.T, c *exec.Cmd) bootDoc {
	t.Helper()
	out, code := runAs(t, c)
	var d bootDoc
	if err := json.Unmarshal(out, &d); err != nil || len(d.Locks) != 1 || (code != cli.ExitOK && code != cli.ExitAttention) {
		t.Fatalf("%v: exit %d, %v\n%s", c.Args, code, err, out)
	}
	return d
}

// TestShadowedBootIDHolder: a holder whose mount namespace has a file bound
// over boot_id takes a lock (lockctl acquire there, for a live process of
// the host's pid namespace): its record names that file's boot id. The
// host, whose boot id is the kernel's, must not read it gone: the pid runs
// with exactly the recorded start time (issue 28, case 4). Neither doctor
// --fix nor acquire takes it.
func TestShadowedBootIDHolder(t *testing.T) {
	needShadow(t)
	bin := lcBinary(t)
	in := shadowed(t, false)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	holder := testutil.Sleeper(t).Process.Pid
	if out, code := runAs(t, in(bin, "acquire", "--holder-pid", strconv.Itoa(holder), l)); code != cli.ExitOK {
		t.Fatalf("acquire in the shadowed mount namespace: exit %d\n%s", code, out)
	}
	rec := lcRead(t, filepath.Join(l, "holder"))
	if !strings.Contains(rec, "\nboot "+shadowBoot+"\n") || !strings.Contains(rec, fmt.Sprintf("\npid %d\n", holder)) {
		t.Fatalf("the holder's record does not name pid %d of boot %s:\n%s", holder, shadowBoot, rec)
	}
	before := testutil.Snapshot(t, dir)

	d := doctorJSON(t, exec.Command(bin, "doctor", "--fix", "--json", dir))
	if v := d.Locks[0]; v.Verdict != "unknown" || !strings.Contains(v.Reason, "from boot "+shadowBoot) || !strings.Contains(v.Reason, "exactly the recorded start time") || v.Action == "removed" {
		t.Errorf("doctor --fix from the host: %s (%s), %s; want unknown naming both the boot and the start time, kept", v.Verdict, v.Reason, v.Action)
	}
	testutil.Untouched(t, dir, before)
	if out, code := runAs(t, exec.Command(bin, "acquire", "--timeout", "1s", l)); code != cli.ExitTimeout {
		t.Errorf("acquire --timeout 1s from the host exited %d on a live holder's lock, want %d:\n%s", code, cli.ExitTimeout, out)
	}
	testutil.Untouched(t, dir, before)
}

// TestShadowedBootIDReader: the reverse. A reader whose boot id is a file
// bound over the kernel's meets a live host holder's lock: its own boot id
// proves nothing, and the holder runs with the recorded start time, so
// neither doctor --fix nor acquire there takes the lock; and a host holder
// that is gone is still found gone there.
func TestShadowedBootIDReader(t *testing.T) {
	needShadow(t)
	bin := lcBinary(t)
	in := shadowed(t, false)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	holder := testutil.Sleeper(t).Process.Pid
	if out, code := runAs(t, exec.Command(bin, "acquire", "--holder-pid", strconv.Itoa(holder), l)); code != cli.ExitOK {
		t.Fatalf("acquire on the host: exit %d\n%s", code, out)
	}
	before := testutil.Snapshot(t, dir)

	d := doctorJSON(t, in(bin, "doctor", "--fix", "--json", dir))
	if d.BootID != shadowBoot {
		t.Fatalf("the reader's boot id is %q, want the shadow %s: the fixture is not what it claims", d.BootID, shadowBoot)
	}
	if v := d.Locks[0]; v.Verdict != "live" || v.Action == "removed" {
		t.Errorf("doctor --fix in the shadowed mount namespace: %s (%s), %s; want live, kept", v.Verdict, v.Reason, v.Action)
	}
	testutil.Untouched(t, dir, before)
	if out, code := runAs(t, in(bin, "acquire", "--timeout", "1s", l)); code != cli.ExitTimeout {
		t.Errorf("acquire --timeout 1s in the shadowed mount namespace exited %d on a live holder's lock, want %d:\n%s", code, cli.ExitTimeout, out)
	}
	testutil.Untouched(t, dir, before)

	// A gone holder of the host is gone there too: by its pid, not by
	// the boot id.
	gone := filepath.Join(dir, "gone.lock")
	host := kernel.LocalHost()
	testutil.Mkdir(t, gone)
	testutil.WriteFile(t, filepath.Join(gone, "holder"), testutil.RecLockctl(testutil.Gone(t), 1, host.BootID, host.PidNS, host.Name))
	out, _ := runAs(t, in(bin, "doctor", "--fix", "--json", gone))
	if !strings.Contains(string(out), `"verdict": "gone"`) || lcExists(gone) {
		t.Errorf("doctor --fix in the shadowed mount namespace of a gone host holder's lock: want gone, removed\n%s", out)
	}
}

// TestShadowedBootIDContainer: a container with both its own pid
// namespace and its own boot id. Its lockctl lock (naming its namespace)
// is foreign from the host, and a filelock record of its process (naming
// no namespace, its start token carrying the container's boot id) is
// held, its pid being that process's inside: neither is removed.
func TestShadowedBootIDContainer(t *testing.T) {
	needShadow(t)
	bin := lcBinary(t)
	in := shadowed(t, true)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	// A shell of the container (not its pid 1) takes the lock for itself,
	// then becomes the sleeper (same pid, same start time).
	ready := filepath.Join(dir, "ready")
	c := in("sh", "-c", fmt.Sprintf(`{ sh -c '%s acquire --holder-pid $$ %s && touch %s && exec sleep 600' & } && wait`, bin, l, ready))
	// unshare --kill-child, tied: the container, its mounts with it, dies
	// with this test binary however it ends.
	if err := testutil.StartTied(c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killWithChildren(c.Process); _ = c.Wait() })
	testutil.WaitFor(t, 20*time.Second, "the container's lock", func() bool { return lcExists(ready) })
	if err := os.Remove(ready); err != nil {
		t.Fatal(err)
	}
	rec := lcRead(t, filepath.Join(l, "holder"))
	if !strings.Contains(rec, "\nboot "+shadowBoot+"\n") {
		t.Fatalf("the container's record does not name boot %s:\n%s", shadowBoot, rec)
	}
	before := testutil.Snapshot(t, dir)
	d := doctorJSON(t, exec.Command(bin, "doctor", "--fix", "--json", dir))
	if v := d.Locks[0]; v.Verdict != "foreign" || v.Action == "removed" {
		t.Errorf("doctor --fix from the host of the container's lockctl lock: %s (%s), %s; want foreign, kept", v.Verdict, v.Reason, v.Action)
	}
	testutil.Untouched(t, dir, before)
	if out, code := runAs(t, exec.Command(bin, "acquire", "--timeout", "1s", l)); code != cli.ExitTimeout {
		t.Errorf("acquire --timeout 1s from the host exited %d on a container's live lock, want %d:\n%s", code, cli.ExitTimeout, out)
	}
	testutil.Untouched(t, dir, before)

	// filelock's own identity record, written by a python3 holder there
	// as filelock writes it: its pid there (a number no host process has),
	// and (boot id << 64) | start time, by the boot id it sees.
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	fdir := t.TempDir()
	fl := filepath.Join(fdir, "f.lock")
	inner := testutil.FreePid(t)
	const write = `import os, socket, sys, time
boot = open("/proc/sys/kernel/random/boot_id").read().strip().replace("-", "")
st = open("/proc/self/stat").read()
start = int(st[st.rindex(")") + 2:].split()[19])
with open(sys.argv[1], "w") as f:
    f.write("%d\n%s\n%d\n" % (os.getpid(), socket.gethostname(), (int(boot, 16) << 64) | start))
open(sys.argv[2], "w").close()
time.sleep(600)
`
	p := in("sh", "-c", fmt.Sprintf(`echo %d > /proc/sys/kernel/ns_last_pid && { %s -c '%s' %s %s & } && wait`, inner-1, python, write, fl, ready))
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killWithChildren(p.Process); _ = p.Wait() })
	testutil.WaitFor(t, 20*time.Second, "the container's filelock record", func() bool { return lcExists(ready) })
	if rec := lcRead(t, fl); !strings.HasPrefix(rec, strconv.Itoa(inner)+"\n") {
		t.Fatalf("the filelock record does not name pid %d: %q", inner, rec)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(inner)); err == nil {
		t.Skipf("a host process took pid %d meanwhile", inner)
	}
	fbefore := testutil.Snapshot(t, fdir)
	d = doctorJSON(t, exec.Command(bin, "doctor", "--fix", "--json", fdir))
	if v := d.Locks[0]; v.Verdict != "unknown" || v.Action == "removed" {
		t.Errorf("doctor --fix from the host of the container's filelock record: %s (%s), %s; want unknown, kept", v.Verdict, v.Reason, v.Action)
	}
	testutil.Untouched(t, fdir, fbefore)
}

func needShadow(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("unshare -m and mount --bind need root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare (util-linux)")
	}
}

// TestBeforeBootShadowedBootID: a generation B record dated before boot (a
// clock not yet set) whose scope hashes the boot id a live mount namespace
// of this boot sees, a file bound over the kernel's, is of this boot: the
// host reads it foreign, and doctor --fix keeps it.
func TestBeforeBootShadowedBootID(t *testing.T) {
	needShadow(t)
	host := kernel.LocalHost()
	if host.MachineID == "" || host.BootID == "" || host.BootIDErr != nil {
		t.Skipf("no generation B scope on this host: %v %v", host.ScopeErr, host.BootIDErr)
	}
	bin := lcBinary(t)
	c := shadowed(t, false)("sleep", "600")
	// One process (unshare and sh exec), tied: its mount namespace, with
	// the bind over boot_id, dies with this test binary however it ends.
	if err := testutil.StartTied(c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	pid := strconv.Itoa(c.Process.Pid)
	testutil.WaitFor(t, 10*time.Second, "the shadowed sleeper", func() bool {
		b, _ := os.ReadFile("/proc/" + pid + "/comm")
		return string(b) == "sleep\n"
	})
	if b, err := os.ReadFile("/proc/" + pid + "/root/proc/sys/kernel/random/boot_id"); err != nil || strings.TrimSpace(string(b)) != shadowBoot {
		t.Fatalf("the sleeper's boot id is %q, %v; want the shadow %s", b, err, shadowBoot)
	}
	dir := t.TempDir()
	beforeBootLock(t, dir, verdict.ScopeDigest(host.MachineID, shadowBoot, host.PidNS))
	before := testutil.Snapshot(t, dir)
	d := doctorJSON(t, exec.Command(bin, "doctor", "--fix", "--json", dir))
	// Foreign because the scope was found, not merely because some
	// process could not be looked into (as this machine's pid 1 cannot).
	if v := d.Locks[0]; v.Verdict != "foreign" || !strings.Contains(v.Reason, "that of a pid namespace of this boot") || v.Action == "removed" {
		t.Errorf("doctor --fix of a record dated before boot with a live shadowed namespace's scope: %s (%s), %s; want foreign, the scope found, kept", v.Verdict, v.Reason, v.Action)
	}
	testutil.Untouched(t, dir, before)
}

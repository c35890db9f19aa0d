//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// The matrix of issue 28: "gone is a proof from every view". Each view is a
// place a process can run: the host, a child pid namespace, a grandchild,
// a time namespace, a mount namespace whose boot_id is a bind-mounted file,
// and a child pid namespace with such a boot_id. A live holder in every view
// writes its own locks there, in every format, as the producer would (its
// own pid, its own field 22, its own boot id, host and pid namespace). A
// reader in every view, and one inside each holder's own namespaces, runs
// doctor --fix and acquire on every lock. Every holder lives throughout,
// so the invariant is one: no lock changes, and no acquire gets in.

// A view is a way to run a command: the argv that goes before it.
type view struct {
	name string
	// pidns: the view has a pid namespace of its own (its processes then
	// take a pid no host process has, through ns_last_pid).
	pidns bool
	argv  func(bootFile string) []string
}

var (
	ownPid  = []string{"unshare", "--pid", "--fork", "--kill-child", "--mount-proc"}
	bindBID = func(file string) []string {
		return []string{"sh", "-c", `mount --bind "$0" /proc/sys/kernel/random/boot_id && exec "$@"`, file}
	}
	views = []view{
		{name: "host", argv: func(string) []string { return nil }},
		{name: "child", pidns: true, argv: func(string) []string { return ownPid }},
		{name: "grandchild", pidns: true, argv: func(string) []string { return append(append([]string{}, ownPid...), ownPid...) }},
		{name: "timens", argv: func(string) []string {
			return []string{"unshare", "--time", "--boottime", "1000", "--monotonic", "1000", "--fork", "--kill-child"}
		}},
		{name: "bootid", argv: func(f string) []string { return append([]string{"unshare", "--mount"}, bindBID(f)...) }},
		{name: "child-bootid", pidns: true, argv: func(f string) []string { return append(append([]string{}, ownPid...), bindBID(f)...) }},
	}
	viewFormats = []string{"pid", "filelock", "registry-a", "registry-b", "lockctl"}
)

// holderPy writes one lock of every format naming this process, as each
// producer would, and takes a lockctl lock through acquire (which records
// its caller), and dies with the shell that starts it, which dies with
// the test binary (startViewHolder). argv: registry, mode, view name,
// lockctl binary. Mode
// "live": it says "ready <pid>" and sleeps, the live holder of its locks.
// Mode "dead": it writes two sets, dead-<view>.* (which a process on the
// host will flock) and crashed-<view>.* (which nobody holds), says "ready
// <pid>" and exits: their recorded holder is gone.
const holderPy = `
import ctypes, hashlib, os, socket, subprocess, sys, time
parent = os.getppid()
ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: die with the shell
if os.getppid() != parent:
    sys.exit('the shell that started this holder died before it')
reg, mode, view, lc = sys.argv[1:5]
pid = os.getpid()
host = socket.gethostname()
st = open('/proc/self/stat').read()
start = int(st[st.rindex(')') + 2:].split()[19])
boot = open('/proc/sys/kernel/random/boot_id').read().strip()
mid = open('/etc/machine-id').read().split('\n')[0].strip()
scope = hashlib.sha256(('agmsg-lock-scope:%s:%s:%s' % (mid, boot, os.readlink('/proc/self/ns/pid'))).encode()).hexdigest()
def put(path, s):
    with open(path, 'w') as f:
        f.write(s)
def locks(name):
    p = lambda f: os.path.join(reg, name + '.' + f + '.lock')
    put(p('pid'), '%d\n' % pid)
    put(p('filelock'), '%d\n%s\n%d\n' % (pid, host, (int(boot.replace('-', ''), 16) << 64) | start))
    os.mkdir(p('registry-a'))
    put(p('registry-a') + '.holder', 'token %s.%d.%d.%s\npid %d\ncommand holder\nhost %s\n' % (host, pid, int(time.time()), '0' * 32, pid, host))
    tok = '%d.%032x.1' % (pid, 1)
    os.mkdir(p('registry-b'))
    put(os.path.join(p('registry-b'), 'holder.' + tok), 'token %s\npid %d\ncommand holder\nhost %s\nscope %s\n' % (tok, pid, host, scope))
    subprocess.run([lc, 'acquire', p('lockctl')], check=True)
if mode == 'live':
    locks(view)
    print('ready', pid, flush=True)
    time.sleep(3600)
locks('dead-' + view)
locks('crashed-' + view)
print('ready', pid, flush=True)
`

// flockPy takes an flock on every path it is given, says "ready" and
// holds them.
const flockPy = `
import fcntl, os, sys, time
fds = []
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fds.append(fd)
print('ready', flush=True)
time.sleep(3600)
`

// acquireEachSh runs "lockctl acquire --timeout T" on every lock named
// after its first three arguments (lockctl, T, the registry), all at once,
// each two shells deep (so that the acquirer's parent, its holder, is no
// namespace's init), and prints "<status> <name> <output>" for each.
const acquireEachSh = `bin=$1 timeout=$2 reg=$3
shift 3
for name; do
	(
		out=$(sh -c '"$0" acquire --timeout "$2" "$1" 2>&1; exit $?' "$bin" "$reg/$name" "$timeout")
		echo "$? $name $(printf '%s' "$out" | tr '\n' ' ')"
	) &
done
wait
`

// acquired is one acquire's exit status and output.
type acquired struct {
	code int
	out  string
}

// acquireEach runs acquire on every one of names in reg at once, from one
// process started with argv (the reader's view: one namespace for all,
// rather than one for each, which was most of the test's time), and
// returns each one's status and output.
func acquireEach(t *testing.T, argv []string, bin, reg string, names []string, timeout string) map[string]acquired {
	t.Helper()
	args := append(append(append([]string{}, argv...), "sh", "-c", acquireEachSh, "sh", bin, timeout, reg), names...)
	out, code := runAs(t, exec.Command(args[0], args[1:]...))
	got := map[string]acquired{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		c, rest, _ := strings.Cut(line, " ")
		name, text, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(c)
		if err != nil || !slices.Contains(names, name) {
			continue
		}
		got[name] = acquired{n, strings.TrimSpace(text)}
	}
	for _, name := range names {
		if _, ok := got[name]; !ok {
			t.Fatalf("acquire of %s said nothing (the shell exited %d):\n%s", name, code, out)
		}
	}
	return got
}

// viewHolder is a holder in one view: a live one, or the namespaces a
// dead one ran in (kept by a sleep, to be entered).
type viewHolder struct {
	view view
	cmd  *exec.Cmd
	// pid is, on the host, the live holder, or the process that keeps the
	// dead one's namespaces.
	pid int
}

// startViewHolder runs holderPy in mode in view v, writing into reg, and
// waits until its locks are all in place. A dead holder's namespaces stay,
// held by a sleep.
func startViewHolder(t *testing.T, v view, mode, reg, bin, py, bootFile string, except ...int) *viewHolder {
	t.Helper()
	run := fmt.Sprintf(`python3 %s %s %s %s %s`, py, reg, mode, v.name, bin)
	keep, comm := "wait", "python3"
	if mode == "dead" {
		keep, comm = "exec sleep 3600", "sleep"
	}
	if v.pidns {
		// The holder is not the namespace's init, and takes a pid no host
		// process has: a bare pid read on the host must not name one.
		run = fmt.Sprintf(`echo %d > /proc/sys/kernel/ns_last_pid && { %s & } && wait $! && %s`, testutil.FreePid(t, except...)-1, run, keep)
	} else {
		run = fmt.Sprintf(`{ %s & } && wait $! && %s`, run, keep)
	}
	argv := append(v.argv(bootFile), "sh", "-c", run)
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/"}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	c.Stderr = &stderr
	// Tied to this process: the shell (or unshare, whose --kill-child
	// takes the pid namespace along) dies with it, and the holder with the
	// shell; so no namespace of a view, nor the bind over boot_id of one,
	// outlives the test binary.
	if err := testutil.StartTied(c); err != nil {
		t.Fatal(err)
	}
	h := &viewHolder{view: v, cmd: c}
	// Every process of the view is in c's process group, in whatever pid
	// namespace: killed together, they leave no one holding the pipes.
	t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); _ = c.Wait() })
	readyLine(t, out, &stderr, "the "+mode+" holder in view "+v.name)
	testutil.WaitFor(t, 10*time.Second, "the holder's host pid", func() bool {
		h.pid = descendant(c.Process.Pid, comm)
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.Process.Pid)); h.pid == 0 && strings.TrimSpace(string(b)) == comm {
			h.pid = c.Process.Pid // the shell itself has become it
		}
		return h.pid > 0
	})
	return h
}

// readyLine waits up to 30s for a line "ready..." from out.
func readyLine(t *testing.T, out io.Reader, stderr *strings.Builder, who string) {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "ready") {
			t.Fatalf("%s is not ready: %q\n%s", who, l, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s is not ready after 30s\n%s", who, stderr.String())
	}
}

// descendant is the first process named comm below pid, or 0.
func descendant(pid int, comm string) int {
	for _, c := range lcChildren(pid) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c)); strings.TrimSpace(string(b)) == comm {
			return c
		}
		if d := descendant(c, comm); d > 0 {
			return d
		}
	}
	return 0
}

// TestEveryViewKeepsLiveLocks is issue 28's matrix: reader {a fresh
// process in every view, one inside every live holder's namespaces, one
// inside every dead holder's} × holder {every view, live; every view,
// dead but its locks flocked from the host} × format × {doctor --fix,
// acquire}: no lock changes, and no acquire gets in. And acquire inside a
// container breaks a lock whose holder crashed in that container and that
// nobody holds.
func TestEveryViewKeepsLiveLocks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: namespaces and bind mounts")
	}
	for _, tool := range []string{"unshare", "nsenter", "python3", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	dir, bin := publicBin(t)
	py, flocker := filepath.Join(dir, "holder.py"), filepath.Join(dir, "flock.py")
	testutil.WriteFile(t, py, []byte(holderPy))
	testutil.WriteFile(t, flocker, []byte(flockPy))
	// Two boot ids that are only files: one for the holders' views, one
	// for the readers', so that neither agrees with the kernel's nor with
	// each other.
	holderBoot, readerBoot := filepath.Join(dir, "boot-holder"), filepath.Join(dir, "boot-reader")
	testutil.WriteFile(t, holderBoot, []byte("11111111-2222-3333-4444-555555555555\n"))
	testutil.WriteFile(t, readerBoot, []byte("66666666-7777-8888-9999-000000000000\n"))
	orig := filepath.Join(dir, "reg")
	testutil.Mkdir(t, orig)

	var live, dead []*viewHolder
	var taken []int
	for _, v := range views {
		h := startViewHolder(t, v, "live", orig, bin, py, holderBoot, taken...)
		live = append(live, h)
		taken = append(taken, h.pid)
		d := startViewHolder(t, v, "dead", orig, bin, py, holderBoot, taken...)
		dead = append(dead, d)
	}

	// The readers: a fresh process in every view (its offsets and boot
	// file other than the holders'), and one inside each holder's own
	// namespaces, every one of them (nsenter --all).
	type reader struct {
		name string
		argv []string
	}
	var readers []reader
	for _, v := range views {
		argv := v.argv(readerBoot)
		if v.name == "timens" {
			argv = []string{"unshare", "--time", "--boottime", "2000", "--monotonic", "2000", "--fork", "--kill-child"}
		}
		readers = append(readers, reader{"fresh-" + v.name, argv})
	}
	for _, h := range live {
		readers = append(readers, reader{"inside-" + h.view.name, []string{"nsenter", "--target", strconv.Itoa(h.pid), "--all"}})
	}
	for _, h := range dead {
		readers = append(readers, reader{"inside-dead-" + h.view.name, []string{"nsenter", "--target", strconv.Itoa(h.pid), "--all"}})
	}

	// Each reader gets its own copy of the registry: the records name
	// their holders, not their paths, so every copy is held by the same
	// live processes, and one reader's damage does not show in the next
	// one's cells. A process on the host flocks every dead holder's lock
	// in every copy: those are held by it.
	var held, flocked []string // the locks no one may change, and those of them flocked
	var regs []string
	for i := range readers {
		reg := fmt.Sprintf("%s%d", orig, i)
		if out, err := exec.Command("cp", "-a", orig, reg).CombinedOutput(); err != nil {
			t.Fatalf("cp -a: %v\n%s", err, out)
		}
		regs = append(regs, reg)
	}
	for _, v := range views {
		for _, f := range viewFormats {
			held = append(held, v.name+"."+f+".lock", "dead-"+v.name+"."+f+".lock")
			for _, reg := range regs {
				flocked = append(flocked, filepath.Join(reg, "dead-"+v.name+"."+f+".lock"))
			}
		}
	}
	fl := exec.Command("python3", append([]string{flocker}, flocked...)...)
	fl.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	flOut, err := fl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var flErr strings.Builder
	fl.Stderr = &flErr
	if err := testutil.StartTied(fl); err != nil { // one process: it dies with this one
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-fl.Process.Pid, syscall.SIGKILL); _ = fl.Wait() })
	readyLine(t, flOut, &flErr, "the host's flocker")

	for i, r := range readers {
		t.Run(r.name, func(t *testing.T) {
			reg := regs[i]
			before := testutil.Snapshot(t, reg)
			lc := func(args ...string) ([]byte, int) {
				argv := append(append(append([]string{}, r.argv...), bin), args...)
				return runAs(t, exec.Command(argv[0], argv[1:]...))
			}
			// Two shells deep, so that the acquirer's parent (its holder)
			// is no namespace's init.
			acquire := func(l string, timeout string) ([]byte, int) {
				argv := append(append([]string{}, r.argv...), "sh", "-c",
					`sh -c '"$0" acquire --timeout "$2" "$1"; exit $?' "$0" "$1" "$2"; exit $?`, bin, l, timeout)
				return runAs(t, exec.Command(argv[0], argv[1:]...))
			}
			out, code := lc("doctor", "--fix", "--json", reg)
			var doc struct {
				Locks []struct{ Path, Verdict, Reason, Action string }
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatalf("doctor --fix --json exited %d: %v\n%s", code, err, out)
			}
			judged := map[string]bool{}
			for _, l := range doc.Locks {
				name := filepath.Base(l.Path)
				judged[name] = true
				if slices.Contains(held, name) && (l.Verdict == "gone" || l.Action == "removed") {
					t.Errorf("%s: %s, %s (%s), but it is held", name, l.Verdict, l.Action, l.Reason)
				}
			}
			for _, name := range held {
				if !judged[name] {
					t.Errorf("%s: not judged", name)
				}
			}
			var got []string
			for name, a := range acquireEach(t, r.argv, bin, reg, held, "300ms") {
				if a.code == 0 {
					got = append(got, fmt.Sprintf("%s (%s)", name, a.out))
				}
			}
			sort.Strings(got)
			for _, g := range got {
				t.Errorf("acquire got in: %s", g)
			}
			after := testutil.Snapshot(t, reg)
			for _, name := range held {
				if d := changed(reg, filepath.Join(reg, name), before, after); d != "" {
					t.Errorf("%s changed: %s", name, d)
				}
			}
			// Inside a container whose holder crashed, with nobody holding
			// its lockctl lock (which names its pid namespace), acquire
			// breaks it at once. (A bare pid there stays unknown: the
			// container cannot see whether another namespace has it.)
			if r.name == "inside-dead-child" {
				name := "crashed-child.lockctl.lock"
				if out, code := acquire(filepath.Join(reg, name), "10s"); code != 0 {
					t.Errorf("acquire %s inside the container its holder crashed in exited %d, want 0:\n%s", name, code, out)
				}
			}
		})
	}
}

//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/why"
)

// lockctl why PID (issue 44), with real processes and real locks.

// whyOf runs lockctl why --json on pids, checks its exit status, and
// returns its report.
func (r *lcReaper) whyOf(want int, pids ...int) *why.Report {
	r.t.Helper()
	args := []string{"why", "--json"}
	for _, p := range pids {
		args = append(args, strconv.Itoa(p))
	}
	res := r.lockctl(nil, args...)
	var rep why.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || res.code != want {
		r.t.Fatalf("lockctl %s: exit %d (want %d), %v\n%s\n%s", strings.Join(args, " "), res.code, want, err, res.stdout, res.stderr)
	}
	return &rep
}

// blockedIn waits until some process at or below pid is blocked in
// system call nr (on amd64: flock 73, fcntl 72, read 0), and returns it.
func blockedIn(t *testing.T, pid, nr int) int {
	t.Helper()
	var found int
	testutil.WaitFor(t, 30*time.Second, fmt.Sprintf("a process below %d to block in system call %d", pid, nr), func() bool {
		var walk func(int) bool
		walk = func(p int) bool {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", p))
			if f := strings.Fields(string(b)); len(f) > 0 && f[0] == strconv.Itoa(nr) {
				found = p
				return true
			}
			for _, c := range lcChildren(p) {
				if walk(c) {
					return true
				}
			}
			return false
		}
		return walk(pid)
	})
	return found
}

// waitsOn finds, anywhere in p's tree, the wait on path.
func waitsOn(p *why.Proc, path string) *why.Wait {
	for _, w := range p.Waits {
		if w.Path == path {
			return w
		}
		for _, h := range w.Holders {
			if x := waitsOn(h, path); x != nil {
				return x
			}
		}
	}
	for _, c := range p.Children {
		if x := waitsOn(c, path); x != nil {
			return x
		}
	}
	return nil
}

func holderPids(w *why.Wait) []int {
	var out []int
	for _, h := range w.Holders {
		out = append(out, h.Pid)
	}
	return out
}

// TestWhyChainOfThree: a shell blocked in flock on A, whose holder is
// blocked on B, whose holder sleeps: why names A, B, both holders and the
// end, from the blocked flock's pid and from a bash -c two levels above.
func TestWhyChainOfThree(t *testing.T) {
	if runtimeArch() != "amd64" {
		t.Skip("the system call numbers here are amd64's")
	}
	flock := lcFlock(t)
	r := lcNewReaper(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "A.lock"), filepath.Join(dir, "B.lock")
	hb := r.start(nil, flock, b, "sleep", "60")
	testutil.WaitFor(t, 30*time.Second, "B's holder to start its command", func() bool { return len(lcChildren(hb.pid)) > 0 })
	ha := r.start(nil, flock, a, "sh", "-c", "flock "+b+" true")
	blockedIn(t, ha.pid, 73)
	top := r.start(nil, "/bin/bash", "-c", "sh -c 'flock "+a+" true'; true")
	waiter := blockedIn(t, top.pid, 73)
	for _, from := range []int{waiter, top.pid} {
		rep := r.whyOf(cli.ExitOK, from)
		wa := waitsOn(rep.Processes[0], a)
		if wa == nil || wa.How != "flock" || !wa.InTable || fmt.Sprint(holderPids(wa)) != fmt.Sprint([]int{ha.pid}) {
			t.Fatalf("why %d: the wait on A is %+v, want flock, in the table, held by %d", from, wa, ha.pid)
		}
		wb := waitsOn(rep.Processes[0], b)
		if wb == nil || fmt.Sprint(holderPids(wb)) != fmt.Sprint([]int{hb.pid}) || wb.End != why.EndRuns {
			t.Fatalf("why %d: the wait on B is %+v, want held by %d, ending in a holder that runs", from, wb, hb.pid)
		}
		if len(rep.Ends) != 1 || rep.Ends[0].Kind != why.EndRuns || !strings.Contains(rep.Ends[0].Why, "sleep") {
			t.Errorf("why %d ends %+v, want one end: B's holder, whose sleep runs", from, rep.Ends)
		}
	}
	res := r.mustLockctl(cli.ExitOK, "why", strconv.Itoa(top.pid))
	for _, want := range []string{"waits in flock(2) for an exclusive flock on " + a, "held by pid " + strconv.Itoa(ha.pid), "waits in flock(2) for an exclusive flock on " + b, "ends: runs:"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("why's text does not say %q:\n%s", want, res.stdout)
		}
	}
}

// TestWhyDeadlock: two processes each hold one flock and wait on the
// other's: a cycle with both members, exit 1.
func TestWhyDeadlock(t *testing.T) {
	if runtimeArch() != "amd64" {
		t.Skip("the system call numbers here are amd64's")
	}
	flock := lcFlock(t)
	r := lcNewReaper(t)
	dir := t.TempDir()
	c, d, goFile := filepath.Join(dir, "C.lock"), filepath.Join(dir, "D.lock"), filepath.Join(dir, "go")
	// Bounded (30 s), so that a test binary killed mid-way leaves no loop.
	wait := "i=0; while [ ! -e " + goFile + " ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done; "
	p1 := r.start(nil, flock, c, "sh", "-c", wait+"flock "+d+" true")
	p2 := r.start(nil, flock, d, "sh", "-c", wait+"flock "+c+" true")
	testutil.WaitFor(t, 30*time.Second, "both holders to start", func() bool { return len(lcChildren(p1.pid)) > 0 && len(lcChildren(p2.pid)) > 0 })
	testutil.WriteFile(t, goFile, nil)
	blockedIn(t, p1.pid, 73)
	blockedIn(t, p2.pid, 73)
	rep := r.whyOf(cli.ExitAttention, p1.pid)
	if len(rep.Ends) == 0 || rep.Ends[0].Kind != why.EndCycle {
		t.Fatalf("why on a deadlock ends %+v, want a cycle", rep.Ends)
	}
	wd, wc := waitsOn(rep.Processes[0], d), waitsOn(rep.Processes[0], c)
	if wd == nil || wc == nil || fmt.Sprint(holderPids(wd)) != fmt.Sprint([]int{p2.pid}) || fmt.Sprint(holderPids(wc)) != fmt.Sprint([]int{p1.pid}) || wc.End != why.EndCycle {
		t.Fatalf("why on a deadlock: D %+v, C %+v; want D held by %d, C by %d, a cycle", wd, wc, p2.pid, p1.pid)
	}
	r.killTree(p1.pid)
	r.killTree(p2.pid)
}

// TestWhyLockctlWait: a lockctl acquire waiting on a lock whose holder
// sleeps is named with the lock and its holder (its own mark, not its
// argv); one waiting on a bare pid file whose holder is gone ends in that
// gone holder, exit 1.
func TestWhyLockctlWait(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	s := r.sleeper()
	r.mustLockctl(cli.ExitOK, "acquire", "--holder-pid", strconv.Itoa(s.pid), l)
	w := r.start(nil, lcBinary(t), "acquire", "--timeout", "60s", l)
	if !w.awaitStderr("waiting for", 30*time.Second) {
		t.Fatalf("acquire did not wait: %s", w.errText())
	}
	rep := r.whyOf(cli.ExitOK, w.pid)
	wt := waitsOn(rep.Processes[0], l)
	if wt == nil || wt.How != "lockctl" || wt.Verdict != "live" || fmt.Sprint(holderPids(wt)) != fmt.Sprint([]int{s.pid}) || wt.End != why.EndRuns {
		t.Fatalf("why on a waiting acquire: %+v, want lockctl's wait on %s, live, held by %d", wt, l, s.pid)
	}
	w.kill()

	g := filepath.Join(dir, "g.lock")
	testutil.WriteFile(t, g, []byte(strconv.Itoa(r.gonePid())+"\n"))
	w = r.start(nil, lcBinary(t), "acquire", "--timeout", "60s", g)
	if !w.awaitStderr("waiting for", 30*time.Second) {
		t.Fatalf("acquire did not wait on %s: %s", g, w.errText())
	}
	rep = r.whyOf(cli.ExitAttention, w.pid)
	if wt := waitsOn(rep.Processes[0], g); wt == nil || wt.End != why.EndGone {
		t.Fatalf("why on an acquire waiting on a gone holder's bare pid file: %+v, want a chain ending gone", wt)
	}
	w.kill()
}

// TestWhyPipe: a process stuck reading a pipe is said as such, exit 0.
func TestWhyPipe(t *testing.T) {
	if runtimeArch() != "amd64" {
		t.Skip("the system call numbers here are amd64's")
	}
	r := lcNewReaper(t)
	p := r.start(nil, "/bin/sh", "-c", "sleep 60 | cat")
	cat := blockedIn(t, p.pid, 0)
	res := r.mustLockctl(cli.ExitOK, "why", strconv.Itoa(cat))
	if !strings.Contains(res.stdout, "reading pipe:[") || !strings.Contains(res.stdout, "no lock wait found") {
		t.Errorf("why on a process reading a pipe:\n%s", res.stdout)
	}
	r.killTree(p.pid)
}

// TestWhyRecordLocks: a POSIX fcntl wait and an OFD wait, each named.
func TestWhyRecordLocks(t *testing.T) {
	if runtimeArch() != "amd64" {
		t.Skip("the system call numbers here are amd64's")
	}
	python := lcPython(t)
	r := lcNewReaper(t)
	dir := t.TempDir()
	const posix = "import fcntl,sys,time\nf=open(sys.argv[1],'a+')\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint('locked',flush=True)\ntime.sleep(600)"
	const ofd = "import fcntl,struct,sys,time\nf=open(sys.argv[1],'a+')\nfcntl.fcntl(f,fcntl.F_OFD_SETLKW,struct.pack('hhxxxxqqixxxx',fcntl.F_WRLCK,0,0,0,0))\nprint('locked',flush=True)\ntime.sleep(600)"
	for _, c := range []struct{ how, code string }{{"POSIX lock", posix}, {"OFD lock", ofd}} {
		f := filepath.Join(dir, strings.ReplaceAll(c.how, " ", "-")+".lock")
		h := r.start(nil, python, "-c", c.code, f)
		testutil.WaitFor(t, 30*time.Second, "the holder to lock", func() bool { return strings.Contains(h.outText(), "locked") || h.done() })
		w := r.start(nil, python, "-c", c.code, f)
		blockedIn(t, w.pid, 72)
		rep := r.whyOf(cli.ExitOK, w.pid)
		wt := waitsOn(rep.Processes[0], f)
		if wt == nil || wt.How != c.how || !wt.InTable || fmt.Sprint(holderPids(wt)) != fmt.Sprint([]int{h.pid}) {
			t.Errorf("why on a process waiting for a %s: %+v, want it named, in the table, held by %d", c.how, wt, h.pid)
		}
		r.killTree(w.pid)
		r.killTree(h.pid)
	}
}

// TestWhyAcrossPidNamespaces: a process in a pid namespace waiting on a
// lock a host process holds, and the reverse: both pids named.
func TestWhyAcrossPidNamespaces(t *testing.T) {
	if runtimeArch() != "amd64" {
		t.Skip("the system call numbers here are amd64's")
	}
	if os.Geteuid() != 0 {
		t.Skip("unshare --pid needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux)")
	}
	flock := lcFlock(t)
	r := lcNewReaper(t)
	dir := t.TempDir()
	a := filepath.Join(dir, "A.lock")
	host := r.start(nil, flock, a, "sleep", "60")
	testutil.WaitFor(t, 30*time.Second, "the host holder to start", func() bool { return len(lcChildren(host.pid)) > 0 })
	u := r.start(nil, unshare, "--pid", "--fork", "--kill-child", "--mount-proc", flock, a, "true")
	inner := blockedIn(t, u.pid, 73)
	rep := r.whyOf(cli.ExitOK, inner)
	if p := rep.Processes[0]; len(p.NSPids) == 0 || p.PidNS == "" {
		t.Errorf("why on a container's process: %+v, want its pid in its container and its namespace named", p)
	}
	if wt := waitsOn(rep.Processes[0], a); wt == nil || fmt.Sprint(holderPids(wt)) != fmt.Sprint([]int{host.pid}) {
		t.Errorf("why on a container's process waiting on a host lock: %+v, want held by %d", wt, host.pid)
	}
	r.killTree(u.pid)
	r.killTree(host.pid)

	// The reverse: the container holds, the host waits.
	b := filepath.Join(dir, "B.lock")
	u = r.start(nil, unshare, "--pid", "--fork", "--kill-child", "--mount-proc", flock, b, "sleep", "600")
	testutil.WaitFor(t, 30*time.Second, "the container's holder", func() bool {
		k := lcChildren(u.pid)
		return len(k) > 0 && len(lcChildren(k[0])) > 0
	})
	w := r.start(nil, flock, b, "true")
	blockedIn(t, w.pid, 73)
	rep = r.whyOf(cli.ExitOK, w.pid)
	wt := waitsOn(rep.Processes[0], b)
	if wt == nil || len(wt.Holders) != 1 || len(wt.Holders[0].NSPids) == 0 {
		t.Errorf("why on a host process waiting on a container's lock: %+v, want its holder named by both pids", wt)
	}
	r.killTree(w.pid)
	r.killTree(u.pid)
}

func runtimeArch() string { return runtime.GOARCH }

// TestWhyUnprivilegedReaderDoubts: a reader who may not read a task's
// system call (nobody, on root's processes) gets a doubt with its reason,
// never a conclusion.
func TestWhyUnprivilegedReaderDoubts(t *testing.T) {
	if runtimeArch() != "amd64" {
		t.Skip("the system call numbers here are amd64's")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run why as nobody on root's processes")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv (util-linux)")
	}
	flock := lcFlock(t)
	r := lcNewReaper(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "A.lock")
	h := r.start(nil, flock, a, "sleep", "60")
	testutil.WaitFor(t, 30*time.Second, "the holder to start", func() bool { return len(lcChildren(h.pid)) > 0 })
	w := r.start(nil, flock, a, "true")
	blockedIn(t, w.pid, 73)
	bin := lcBinary(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	p := r.start(nil, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "why", "--json", strconv.Itoa(w.pid))
	code := p.wait(60 * time.Second)
	var rep why.Report
	if err := json.Unmarshal([]byte(p.outText()), &rep); err != nil || code != cli.ExitOK {
		t.Fatalf("why as nobody: exit %d, %v\n%s\n%s", code, err, p.outText(), p.errText())
	}
	pr := rep.Processes[0]
	if pr.Doubt == "" || len(pr.Waits) > 0 || len(rep.Ends) != 1 || rep.Ends[0].Kind != why.EndDoubt {
		t.Errorf("why as nobody on root's waiter: %+v, ends %+v; want a doubt with its reason and no conclusion", pr, rep.Ends)
	}
}

// TestWaitNamesHoldersWait: acquire's wait names the holder's own wait
// ("held by pid N (sh), which waits on DB, held by pid M (flock)").
func TestWaitNamesHoldersWait(t *testing.T) {
	flock := lcFlock(t)
	r := lcNewReaper(t)
	dir := t.TempDir()
	db, x := filepath.Join(dir, "db.lock"), filepath.Join(dir, "x.lock")
	h := r.start(nil, flock, db, "sleep", "60")
	testutil.WaitFor(t, 30*time.Second, "db's holder to start", func() bool { return len(lcChildren(h.pid)) > 0 })
	run := r.start(nil, lcBinary(t), "run", x, "--", "/bin/sh", "-c", "flock "+db+" true")
	testutil.WaitFor(t, 30*time.Second, "run to take x.lock", func() bool { return lcExists(filepath.Join(x, "holder")) || run.done() })
	w := r.start(nil, lcBinary(t), "acquire", "--timeout", "60s", x)
	want := "which waits on " + db + ", held by pid " + strconv.Itoa(h.pid)
	if !w.awaitStderr(want, 30*time.Second) {
		t.Errorf("acquire's wait does not name its holder's own wait (%q):\n%s", want, w.errText())
	}
	w.kill()
	r.killTree(run.pid)
	r.killTree(h.pid)
}

// TestWhyHolderBeyondTheReadersView: from inside a container (a child pid
// namespace), a lockctl waiting on a lock whose holder runs on the host:
// the waiter's view cannot judge that holder, so the chain ends in that
// doubt, said as such, never in "runs" or "gone".
func TestWhyHolderBeyondTheReadersView(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare --pid needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux)")
	}
	r := lcNewReaper(t)
	dir, files := t.TempDir(), t.TempDir()
	l := filepath.Join(dir, "x.lock")
	s := r.sleeper()
	r.mustLockctl(cli.ExitOK, "acquire", "--holder-pid", strconv.Itoa(s.pid), l)
	out := filepath.Join(files, "why.json")
	u := r.start(nil, unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "/bin/sh", "-c",
		`"$1" acquire --timeout 60s "$2" 2>"$3.err" & w=$!; i=0; while ! grep -q waiting "$3.err" && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done; "$1" why --json $w >"$3"; echo $? >"$3.code"; kill $w`,
		"sh", lcBinary(t), l, out)
	if code := u.wait(60 * time.Second); code != 0 {
		t.Fatalf("the container's shell: exit %d: %s", code, u.errText())
	}
	var rep why.Report
	if err := json.Unmarshal([]byte(lcRead(t, out)), &rep); err != nil || len(rep.Processes) != 1 {
		t.Fatalf("why inside the container: %v\n%s", err, lcRead(t, out))
	}
	wt := waitsOn(rep.Processes[0], l)
	if wt == nil || wt.How != "lockctl" || wt.End != why.EndDoubt || len(wt.Holders) != 0 {
		t.Errorf("why inside a container on a lockctl waiting for a host holder's lock: %+v, want lockctl's wait ending in a doubt", wt)
	}
	if code := strings.TrimSpace(lcRead(t, out+".code")); code != "0" {
		t.Errorf("why ending in a doubt exited %s, want 0", code)
	}
}

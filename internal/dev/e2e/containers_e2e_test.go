//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/verdict"
)

// The matrix of issue 13: where lockctl runs (the reader) × whose lock it
// meets (the holder) × how the lock records its holder (the format) × what
// lockctl is asked to do. Every cell asserts the verdict, and that no lock
// of a live holder changed, inode and bytes. The rule under test: "no such
// pid" means gone only when the reader provably sees the holder's pid
// space; every other doubt is held.

// A reader is a way to run lockctl.
type matrixReader struct {
	name string
	// wrap is the command line that runs lockctl's args as this reader.
	wrap func(bin string, args ...string) *exec.Cmd
	// child: it runs in a child pid namespace. whole: it sees every pid
	// namespace (the initial one, a full /proc). ptrace: it may look into
	// every process, containers' included. write: it may change the
	// registry.
	child, whole, ptrace, write bool
}

// A holder is whose lock it is: a live host process, a live container's
// process, or one of a container that has ended.
type matrixHolder int

const (
	hostLive matrixHolder = iota
	containerLive
	containerEnded
)

func (h matrixHolder) String() string {
	return [...]string{"host-live", "container-live", "container-ended"}[h]
}

var matrixFormats = []string{"pid", "registry-a", "registry-b", "lockctl"}

// want is the verdict the matrix expects of one cell.
func (r matrixReader) want(h matrixHolder, format string) verdict.Verdict {
	namesNS := format == "registry-b" || format == "lockctl" // the record says which namespace
	switch {
	case h == hostLive && !r.child:
		return verdict.Live
	case namesNS && (h != containerEnded || format == "registry-b"):
		// Another namespace's scope or record, and a namespace in use.
		return verdict.Foreign
	case namesNS:
		// The ended namespace's own record: gone only where every
		// namespace can be seen, every process looked into (the live
		// container's may not be, without CAP_SYS_PTRACE).
		if r.whole && r.ptrace {
			return verdict.Gone
		}
		return verdict.Foreign
	case h == containerEnded && r.whole:
		// A bare pid no process has in any namespace.
		return verdict.Gone
	}
	// A bare pid absent here: a live container's process has it, or this
	// reader cannot see whether one does.
	return verdict.Unknown
}

func TestContainersMatrix(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: containers, and readers made from root")
	}
	for _, tool := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s (util-linux) is not installed", tool)
		}
	}
	nobody, err := lookupUser("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.ParseUint(nobody.Uid, 10, 32)
	gid, _ := strconv.ParseUint(nobody.Gid, 10, 32)

	// Nobody must run the binary and read the registries.
	dir, bin := publicBin(t)

	cmd := func(argv ...string) *exec.Cmd { return exec.Command(argv[0], argv[1:]...) }
	readers := []matrixReader{
		{name: "host-root", whole: true, ptrace: true, write: true,
			wrap: func(bin string, a ...string) *exec.Cmd { return cmd(append([]string{bin}, a...)...) }},
		{name: "host-root-without-cap-sys-ptrace", whole: true, write: true,
			wrap: func(bin string, a ...string) *exec.Cmd {
				return cmd(append([]string{"setpriv", "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace", bin}, a...)...)
			}},
		{name: "host-nobody", whole: true,
			wrap: func(bin string, a ...string) *exec.Cmd {
				c := cmd(append([]string{bin}, a...)...)
				c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
				return c
			}},
		{name: "child-pidns-own-proc", child: true, ptrace: true, write: true,
			wrap: func(bin string, a ...string) *exec.Cmd {
				return cmd(append([]string{"unshare", "--pid", "--fork", "--kill-child", "--mount-proc", bin}, a...)...)
			}},
		// It cannot read its own start time from another namespace's
		// /proc, so it takes no lock at all (and says why).
		{name: "child-pidns-host-proc", child: true, ptrace: true,
			wrap: func(bin string, a ...string) *exec.Cmd {
				return cmd(append([]string{"unshare", "--pid", "--fork", "--kill-child", bin}, a...)...)
			}},
		{name: "hidepid", ptrace: true, write: true,
			wrap: func(bin string, a ...string) *exec.Cmd {
				return cmd(append([]string{"unshare", "--mount", "sh", "-c", `mount -t proc -o hidepid=2 proc /proc && exec "$0" "$@"`, bin}, a...)...)
			}},
	}

	host := kernel.LocalHost()
	if host.Name == "" || host.BootID == "" || host.MachineID == "" {
		t.Skip("this host's name, boot id or machine id cannot be read")
	}
	sleeper := testutil.Sleeper(t).Process.Pid
	live := testutil.StartContainer(t, testutil.FreePid(t), "exec sleep 600")
	ended := testutil.StartContainer(t, testutil.FreePid(t, live.Inner), "exec sleep 600")
	endedStart := testutil.StartTicks(ended.Pid)
	ended.Stop()
	type who struct {
		pid   int
		start uint64
		ns    string
	}
	holders := map[matrixHolder]who{
		hostLive:       {sleeper, testutil.StartTicks(sleeper), host.PidNS},
		containerLive:  {live.Inner, testutil.StartTicks(live.Pid), live.NS},
		containerEnded: {ended.Inner, endedStart, ended.NS},
	}

	// registry lays out one lock of every holder and format in a new
	// directory, and returns it with the path of each lock.
	n := 0
	registry := func(t *testing.T) (string, map[string]string) {
		t.Helper()
		n++
		reg := filepath.Join(dir, fmt.Sprintf("reg%d", n))
		if err := os.Mkdir(reg, 0o755); err != nil {
			t.Fatal(err)
		}
		locks := map[string]string{}
		for h, w := range holders {
			for _, f := range matrixFormats {
				p := filepath.Join(reg, fmt.Sprintf("%s.%s.lock", h, f))
				locks[cell(h, f)] = p
				switch f {
				case "pid":
					testutil.WriteFile(t, p, testutil.PidRec(w.pid))
				case "registry-a":
					testutil.Mkdir(t, p)
					testutil.WriteFile(t, p+".holder", testutil.RecA(w.pid, host.Name))
				case "registry-b":
					testutil.Mkdir(t, p)
					tok := testutil.TokenB(w.pid, 1)
					testutil.WriteFile(t, filepath.Join(p, "holder."+tok), testutil.RecB(tok, w.pid, host.Name, verdict.ScopeDigest(host.MachineID, host.BootID, w.ns)))
				case "lockctl":
					testutil.Mkdir(t, p)
					testutil.WriteFile(t, filepath.Join(p, "holder"), testutil.RecLockctl(w.pid, w.start, host.BootID, w.ns, host.Name))
				}
			}
		}
		return reg, locks
	}

	for _, r := range readers {
		for _, action := range []string{"doctor", "fix", "fix-legacy", "run"} {
			t.Run(r.name+"/"+action, func(t *testing.T) {
				reg, locks := registry(t)
				before := testutil.Snapshot(t, reg)
				got := map[string]string{} // cell → verdict, or for run the exit status
				switch action {
				case "run":
					var mu sync.Mutex
					var wg sync.WaitGroup
					for c, p := range locks {
						wg.Go(func() {
							out, code := runAs(t, r.wrap(bin, "run", "--timeout", "200ms", p, "--", "true"))
							mu.Lock()
							defer mu.Unlock()
							got[c] = strconv.Itoa(code)
							switch {
							case code != cli.ExitOK && code != 75 && r.write:
								t.Errorf("%s: lockctl run exited %d, want 0 or 75:\n%s", c, code, out)
							case r.name == "child-pidns-host-proc" && !bytes.Contains(out, []byte("belongs to another pid namespace")):
								t.Errorf("%s: lockctl run in a pid namespace with the host's /proc does not say why it cannot lock:\n%s", c, out)
							}
						})
					}
					wg.Wait()
				default:
					args := []string{"doctor", "--json"}
					if action != "doctor" {
						args = append(args, "--fix")
					}
					if action == "fix-legacy" {
						args = append(args, "--legacy-older-than", "1s")
					}
					out, _ := runAs(t, r.wrap(bin, append(args, reg)...))
					var doc struct {
						Locks []struct{ Path, Verdict, Reason, Action string }
					}
					if err := json.Unmarshal(out, &doc); err != nil {
						t.Fatalf("lockctl %s: %v\n%s", strings.Join(args, " "), err, out)
					}
					for _, l := range doc.Locks {
						for c, p := range locks {
							if p == l.Path {
								got[c] = l.Verdict
								if l.Verdict != string(r.want(cellOf(c))) {
									t.Errorf("%s: %s (%s), want %s", c, l.Verdict, l.Reason, r.want(cellOf(c)))
								}
							}
						}
					}
				}
				after := testutil.Snapshot(t, reg)
				for c, p := range locks {
					h, f := cellOf(c)
					want := r.want(h, f)
					switch {
					case got[c] == "":
						t.Errorf("%s: not judged", c)
					case action == "run" && want == verdict.Gone && r.write && f == "pid" && got[c] == "0":
						// A bare pid file may be taken by a live process
						// rewriting it in place: never broken (scan.InPlace).
						t.Errorf("%s: lockctl run broke a gone bare pid file, which its producers may rewrite in place", c)
					case action == "run" && want == verdict.Gone && r.write && f != "pid" && got[c] != "0":
						t.Errorf("%s: lockctl run exited %s on a gone lock, want 0", c, got[c])
					case action == "run" && want != verdict.Gone && got[c] == "0":
						t.Errorf("%s: lockctl run got in while the lock reads %s", c, want)
					}
					// A lock that is not gone, of a live holder above all,
					// is exactly as it was; a gone one may have gone.
					if want != verdict.Gone || action == "doctor" || !r.write {
						if d := changed(reg, p, before, after); d != "" {
							t.Errorf("%s (%s) changed: %s", c, want, d)
						}
					}
				}
			})
		}
	}
}

func cell(h matrixHolder, format string) string { return h.String() + "/" + format }

func cellOf(c string) (matrixHolder, string) {
	name, format, _ := strings.Cut(c, "/")
	for h := hostLive; h <= containerEnded; h++ {
		if h.String() == name {
			return h, format
		}
	}
	panic("no holder " + name)
}

// changed says how the entries of lock p (itself, what is inside it, and
// its side files) differ between the snapshots, or "" if they do not.
func changed(reg, p string, before, after map[string]testutil.Entry) string {
	name, _ := filepath.Rel(reg, p)
	pick := func(m map[string]testutil.Entry) map[string]testutil.Entry {
		out := map[string]testutil.Entry{}
		for k, v := range m {
			if k == name || strings.HasPrefix(k, name+"/") || strings.HasPrefix(k, name+".") {
				v.Mtime = time.Time{}
				out[k] = v
			}
		}
		return out
	}
	return strings.Join(testutil.Diff(pick(before), pick(after)), "; ")
}

// runAs runs c, with a bounded time, and returns its standard output and
// exit status.
func runAs(t *testing.T, c *exec.Cmd) ([]byte, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/", "NO_COLOR=1"}
	if err := c.Start(); err != nil {
		t.Fatalf("%v: %v", c.Args, err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			killWithChildren(c.Process)
		}
	}()
	err := c.Wait()
	close(done)
	if err != nil && c.ProcessState.ExitCode() < 0 {
		t.Fatalf("%v: %v\n%s", c.Args, err, stderr.String())
	}
	return append(stdout.Bytes(), stderr.Bytes()...), c.ProcessState.ExitCode()
}

// publicBin makes a 0755 directory outside the 0700 test temp dirs, so
// that nobody can reach it, and puts the lockctl binary in it. It returns
// both.
func publicBin(t *testing.T) (dir, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "lockctl-public-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "lockctl")
	copyFile(t, lcBinary(t), bin, 0o755)
	return dir, bin
}

// TestWaiterAcrossNamespaces: a waiter on one side of a pid namespace gets
// the lock, exit 0, once the holder on the other side releases it, and a
// doctor --fix on the holder's side meanwhile leaves the waiter's
// unpublished lock alone (issue 13, case 3).
func TestWaiterAcrossNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a pid namespace needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare (util-linux)")
	}
	_, bin := publicBin(t)
	inNS := func(args ...string) []string {
		return append([]string{"unshare", "--pid", "--fork", "--kill-child", "--mount-proc", bin}, args...)
	}
	onHost := func(args ...string) []string { return append([]string{bin}, args...) }
	for _, tc := range []struct {
		name           string
		holder, waiter func(args ...string) []string
	}{
		{"host-holds-container-waits", onHost, inNS},
		{"container-holds-host-waits", inNS, onHost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := filepath.Join(dir, "x.lock")
			at := func(n string) string { return filepath.Join(dir, n) }
			start := func(argv []string) *exec.Cmd {
				c := exec.Command(argv[0], argv[1:]...)
				c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/", "NO_COLOR=1"}
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if c.ProcessState == nil {
						killWithChildren(c.Process)
						_ = c.Wait()
					}
				})
				return c
			}
			holder := start(tc.holder("run", l, "--", "sh", "-c", fmt.Sprintf(`touch %s; while [ ! -e %s ]; do sleep 0.01; done`, at("held"), at("release"))))
			testutil.WaitFor(t, 10*time.Second, "the holder to hold", func() bool { _, err := os.Stat(at("held")); return err == nil })
			waiter := start(tc.waiter("run", "--timeout", "60s", l, "--", "touch", at("got")))
			var build string
			testutil.WaitFor(t, 10*time.Second, "the waiter's unpublished lock", func() bool {
				m, _ := filepath.Glob(l + ".new.*")
				if len(m) == 1 {
					build = m[0]
				}
				return build != ""
			})
			// A sweep from the holder's side, which the waiter's maker pid
			// means nothing to.
			if out, code := runAs(t, exec.Command(tc.holder("doctor", "--fix", dir)[0], tc.holder("doctor", "--fix", dir)[1:]...)); code != cli.ExitOK && code != cli.ExitAttention {
				t.Fatalf("doctor --fix exited %d:\n%s", code, out)
			}
			if _, err := os.Lstat(build); err != nil {
				t.Errorf("doctor --fix on the holder's side removed the waiter's unpublished lock %s: %v", build, err)
			}
			if err := os.WriteFile(at("release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := holder.Wait(); err != nil {
				t.Errorf("the holder: %v", err)
			}
			if err := waiter.Wait(); err != nil {
				t.Errorf("the waiter: %v, want exit 0 once the holder released", err)
			}
			if _, err := os.Stat(at("got")); err != nil {
				t.Errorf("the waiter's command did not run: %v", err)
			}
			testutil.WantNames(t, dir, "got", "held", "release")
		})
	}
}

// TestRenamedHostJudgesThisBoot: a doctor, and an acquirer, whose host name
// a UTS namespace has changed judge this boot's lockctl locks by the kernel,
// not by the name (issue 13, case 6).
func TestRenamedHostJudgesThisBoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare --uts needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare (util-linux)")
	}
	_, bin := publicBin(t)
	host := kernel.LocalHost()
	dir := t.TempDir()
	l := filepath.Join(dir, "x.lock")
	gone := testutil.Gone(t)
	testutil.Mkdir(t, l)
	testutil.WriteFile(t, filepath.Join(l, "holder"), testutil.RecLockctl(gone, 1, host.BootID, host.PidNS, host.Name))
	renamed := func(args ...string) *exec.Cmd {
		return exec.Command("unshare", append([]string{"--uts", "sh", "-c", `hostname renamed-by-unshare && exec "$0" "$@"`, bin}, args...)...)
	}
	out, _ := runAs(t, renamed("doctor", "--json", dir))
	var doc struct {
		Host  string
		Locks []struct{ Path, Verdict, Reason string }
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Locks) != 1 {
		t.Fatalf("doctor --json under another host name: %v\n%s", err, out)
	}
	if doc.Host != "renamed-by-unshare" || doc.Locks[0].Verdict != "gone" {
		t.Errorf("doctor on host %q: %s (%s), want gone on host renamed-by-unshare", doc.Host, doc.Locks[0].Verdict, doc.Locks[0].Reason)
	}
	if out, code := runAs(t, renamed("run", "--timeout", "5s", l, "--", "true")); code != cli.ExitOK {
		t.Errorf("lockctl run under another host name exited %d on a gone lock of this boot:\n%s", code, out)
	}
	testutil.WantNames(t, dir)
}

// killWithChildren SIGKILLs p's children, then p. For unshare --fork the
// child is the namespace's init: killed first, it is reaped by unshare,
// where killing unshare alone would leave it a zombie of this machine's
// pid 1, which reaps nothing.
func killWithChildren(p *os.Process) {
	for _, c := range lcChildren(p.Pid) {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	_ = p.Kill()
}

//go:build linux

package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/verdict"
)

// TestNamesakesFindsAContainersPid: seen from the host, a process in a pid
// namespace of its own is found by the pid it has there, so that a pid
// file it wrote is never read as a host pid that is not running.
func TestNamesakesFindsAContainersPid(t *testing.T) {
	c := testutil.StartContainer(t, testutil.FreePid(t), "exec sleep 600")
	idx, err := KernelProbe{}.Namesakes()
	if err != nil {
		t.Fatalf("Namesakes() from the host: %v", err)
	}
	var found bool
	for _, n := range idx[c.Inner] {
		found = found || n.Pid == c.Pid && n.NS == c.NS
	}
	if !found {
		t.Errorf("Namesakes()[%d] = %v, want host pid %d in %s", c.Inner, idx[c.Inner], c.Pid, c.NS)
	}
	// Through the caching probe as well, which doctor uses.
	if idx, err := (&verdict.CachingProbe{Next: KernelProbe{}}).Namesakes(); err != nil || len(idx[c.Inner]) == 0 {
		t.Errorf("CachingProbe.Namesakes()[%d] = %v, %v; want the container's process", c.Inner, idx[c.Inner], err)
	}
}

// TestNamespaceInUse: a namespace is in use while a process is in it, and
// has ended once its init has been killed and reaped.
func TestNamespaceInUse(t *testing.T) {
	c := testutil.StartContainer(t, testutil.FreePid(t), "exec sleep 600")
	// The caching probe doctor uses must ask afresh too: a namespace born
	// after a remembered look would read as ended.
	caching := &verdict.CachingProbe{Next: KernelProbe{}}
	for _, p := range []verdict.PidSpace{KernelProbe{}, caching} {
		if used, err := p.NamespaceInUse(c.NS); err != nil || !used {
			t.Fatalf("%T.NamespaceInUse(%s) of a live container = %v, %v; want true", p, c.NS, used, err)
		}
	}
	if used, err := (KernelProbe{}).NamespaceInUse(initialPidNS); err != nil || !used {
		t.Errorf("NamespaceInUse(the host's) = %v, %v; want true", used, err)
	}
	c.Stop()
	for _, p := range []verdict.PidSpace{KernelProbe{}, caching} {
		if used, err := p.NamespaceInUse(c.NS); err != nil || used {
			t.Errorf("%T.NamespaceInUse(%s) of a container that ended = %v, %v; want false", p, c.NS, used, err)
		}
	}
}

// TestPidSpaceFromPartialViews: from a child pid namespace (with its own
// /proc or the host's), under hidepid, and without CAP_SYS_PTRACE, the
// probe refuses the questions it cannot answer from what it sees.
func TestPidSpaceFromPartialViews(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// nsErr: NamespaceInUse must refuse; namesakesErr: Namesakes too.
		namesakesErr, nsErr string
	}{
		{"child-namespace-own-proc", []string{"--pid", "--fork", "--kill-child", "--mount-proc", "{}"}, "child pid namespace", "child pid namespace"},
		{"child-namespace-host-proc", []string{"--pid", "--fork", "--kill-child", "{}"}, "child pid namespace", "child pid namespace"},
		{"hidepid", []string{"--mount", "sh", "-c", `mount -t proc -o hidepid=invisible proc /proc && exec "$0"`, "{}"}, "hides processes", "hides processes"},
		{"no-cap-sys-ptrace", []string{"--mount", "setpriv", "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace", "{}"}, "", "CAP_SYS_PTRACE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A container whose process this reader may not look into.
			testutil.StartContainer(t, testutil.FreePid(t), "exec sleep 600")
			out := probeSelfUnder(t, tc.args...)
			var got struct {
				NamesakesErr string `json:"namesakes_err"`
				NSErr        string `json:"ns_err"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if tc.namesakesErr == "" && got.NamesakesErr != "" || !strings.Contains(got.NamesakesErr, tc.namesakesErr) {
				t.Errorf("Namesakes() error = %q, want one saying %q", got.NamesakesErr, tc.namesakesErr)
			}
			if tc.nsErr == "" || !strings.Contains(got.NSErr, tc.nsErr) {
				t.Errorf("NamespaceInUse() error = %q, want one saying %q", got.NSErr, tc.nsErr)
			}
		})
	}
}

// TestNamesakesLeaveOutZombies: a container's process that has exited and
// was never reaped (its parent never waits, as pid 1 here never does) holds
// nothing, so its pid there is no namesake of a pid file's pid.
func TestNamesakesLeaveOutZombies(t *testing.T) {
	c := testutil.StartContainer(t, testutil.FreePid(t), "sh -c 'true & exec sleep 600'")
	var zombie int
	testutil.WaitFor(t, 10*time.Second, "the container's zombie", func() bool {
		kids := strings.Fields(readTestFile(fmt.Sprintf("/proc/%d/task/%d/children", c.Pid, c.Pid)))
		if len(kids) != 1 {
			return false
		}
		zombie, _ = strconv.Atoi(kids[0])
		st := readTestFile(fmt.Sprintf("/proc/%d/status", zombie))
		s, _ := statusField(st, "State")
		return strings.HasPrefix(s, "Z")
	})
	levels := nsPids(readTestFile(fmt.Sprintf("/proc/%d/status", zombie)))
	if len(levels) < 2 {
		t.Fatalf("the zombie (host pid %d) has no pid of its own in the container: NSpid %v", zombie, levels)
	}
	inner, _ := strconv.Atoi(levels[len(levels)-1])
	idx, err := KernelProbe{}.Namesakes()
	if err != nil {
		t.Fatalf("Namesakes(): %v", err)
	}
	for _, n := range idx[inner] {
		if n.Pid == zombie {
			t.Errorf("Namesakes()[%d] holds the zombie (host pid %d): an exited process holds nothing", inner, zombie)
		}
	}
	if len(idx[c.Inner]) == 0 {
		t.Errorf("Namesakes()[%d] is empty: the container's live process is missing", c.Inner)
	}
}

func TestStatusExited(t *testing.T) {
	for status, want := range map[string]bool{
		"Name:\tsleep\nState:\tZ (zombie)\nThreads:\t1\n":   true,
		"Name:\tsleep\nState:\tX (dead)\nThreads:\t1\n":     true,
		"Name:\tsleep\nState:\tS (sleeping)\nThreads:\t1\n": false,
		"Name:\tjava\nState:\tZ (zombie)\nThreads:\t12\n":   false, // its leader exited; threads live on
		"Name:\tsleep\nThreads:\t1\n":                       false, // no state: doubt
	} {
		if got := statusExited(status); got != want {
			t.Errorf("statusExited(%q) = %v, want %v", status, got, want)
		}
	}
}

func readTestFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// TestNamesakesOfSeesAProcessMadeSinceTheLastLook: the fix protocol asks
// again after each claim. A container started after the last look at every
// process (the kernel's fork count has moved) is seen by the next question,
// though that question is answered from the last look when nothing has
// been created since.
func TestNamesakesOfSeesAProcessMadeSinceTheLastLook(t *testing.T) {
	inner := testutil.FreePid(t)
	if ns, err := (KernelProbe{}).NamesakesOf(inner); err != nil || len(ns) != 0 {
		t.Skipf("pid %d is already a namesake (%v, %v)", inner, ns, err)
	}
	c := testutil.StartContainer(t, inner, "exec sleep 600")
	ns, err := KernelProbe{}.NamesakesOf(inner)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 1 || ns[0].Pid != c.Pid {
		t.Errorf("NamesakesOf(%d) after a container started with that pid = %v, want host pid %d", inner, ns, c.Pid)
	}
}

// TestNamesakesOfFromTheLastLook: while the fork count stands still (made
// to here), a question is answered from the last look, and a namesake that
// has exited since is checked and left out.
func TestNamesakesOfFromTheLastLook(t *testing.T) {
	c := testutil.StartContainer(t, testutil.FreePid(t), "exec sleep 600")
	count := holdForkCount(t)
	if _, err := (KernelProbe{}).Namesakes(); err != nil {
		t.Fatal(err)
	}
	if ns, err := (KernelProbe{}).NamesakesOf(c.Inner); err != nil || len(ns) != 1 {
		t.Fatalf("NamesakesOf(%d) = %v, %v; want the container's process", c.Inner, ns, err)
	}
	// A process made now is not seen while the count says none was: the
	// answer came from the look.
	d := testutil.StartContainer(t, testutil.FreePid(t, c.Inner), "exec sleep 600")
	if ns, _ := (KernelProbe{}).NamesakesOf(d.Inner); len(ns) != 0 {
		t.Fatalf("NamesakesOf(%d) = %v with the fork count unchanged; want the last look's answer (none)", d.Inner, ns)
	}
	c.Stop()
	testutil.WaitFor(t, 10*time.Second, "the container's process to go", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", c.Pid))
		return os.IsNotExist(err)
	})
	if ns, err := (KernelProbe{}).NamesakesOf(c.Inner); err != nil || len(ns) != 0 {
		t.Errorf("NamesakesOf(%d) = %v, %v after the process exited; want none", c.Inner, ns, err)
	}
	*count++ // a fork: the next question looks again
	if ns, _ := (KernelProbe{}).NamesakesOf(d.Inner); len(ns) != 1 {
		t.Errorf("NamesakesOf(%d) = %v after the fork count moved; want the second container's process", d.Inner, ns)
	}
}

// TestNamespaceInUseFromTheLastLook: a namespace a look found empty stays
// ended while nothing has been created since; a namespace in use is asked
// about afresh.
func TestNamespaceInUseFromTheLastLook(t *testing.T) {
	c := testutil.StartContainer(t, testutil.FreePid(t), "exec sleep 600")
	count := holdForkCount(t)
	if used, err := (KernelProbe{}).NamespaceInUse(c.NS); err != nil || !used {
		t.Fatalf("NamespaceInUse(%s) = %v, %v; want in use", c.NS, used, err)
	}
	c.Stop()
	testutil.WaitFor(t, 10*time.Second, "the namespace to end", func() bool {
		used, err := KernelProbe{}.NamespaceInUse(c.NS)
		return err == nil && !used
	})
	// White-box: the cache holds the namespace as ended at this count. Were
	// a process to enter a namespace of that inode, a fork would have moved
	// the count, and the question is asked afresh.
	if !looks.ended(*count, true, c.NS) || looks.ended(*count+1, true, c.NS) {
		t.Errorf("the ended namespace is not kept at its fork count only")
	}
}

func TestParseForks(t *testing.T) {
	for stat, want := range map[string]uint64{
		"cpu  1 2 3\nctxt 10\nbtime 1700000000\nprocesses 119508\nprocs_running 1\n": 119508,
		"ctxt 0\nbtime 1700000000\nprocesses 0\nprocs_running 0\n":                   0, // gVisor: no count, nothing kept
		"ctxt 0\nbtime 1700000000\n":                                                 0,
		"processes -3\n":                                                             0,
	} {
		n, ok := parseForks(stat)
		if n != want || ok != (want > 0) {
			t.Errorf("parseForks(%q) = %d, %v; want %d, %v", stat, n, ok, want, want > 0)
		}
	}
	if n, ok := forks(); !ok || n == 0 {
		t.Errorf("forks() on this machine = %d, %v; want its count", n, ok)
	}
}

// holdForkCount makes the kernel's fork count, as the probe reads it, a
// number the test moves by hand, for the rest of the test.
func holdForkCount(t *testing.T) *uint64 {
	count := uint64(1 << 40)
	old := forks
	forks = func() (uint64, bool) { return count, true }
	t.Cleanup(func() { forks = old })
	return &count
}

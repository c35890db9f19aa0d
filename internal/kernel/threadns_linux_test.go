//go:build linux

package kernel

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/verdict"
)

// TestNamesakesFindsAContainersThread: seen from the host, a thread (not
// its process's leader) of a container's process is found by the id it has
// inside, a number no host process or thread has, so that a pid file
// holding that id is never read as a host pid that is not running (issue
// 28, case 3).
func TestNamesakesFindsAContainersThread(t *testing.T) {
	ct := testutil.StartContainerThread(t)
	idx, err := KernelProbe{}.Namesakes()
	if err != nil {
		t.Fatalf("Namesakes() from the host: %v", err)
	}
	if !hasThread(idx[ct.Inner], ct) {
		t.Errorf("Namesakes()[%d] = %+v, want thread %d of host pid %d in %s", ct.Inner, idx[ct.Inner], ct.Tid, ct.Process.Pid, ct.Process.NS)
	}
	if ns, err := (KernelProbe{}).NamesakesOf(ct.Inner); err != nil || !hasThread(ns, ct) {
		t.Errorf("NamesakesOf(%d) = %+v, %v; want thread %d", ct.Inner, ns, err, ct.Tid)
	}

	// Judged from the host, a pid file holding the thread's id is held,
	// and the reason names the thread.
	if p := (KernelProbe{}).Probe(ct.Inner); p.State != verdict.StateAbsent {
		t.Fatalf("Probe(%d) from the host = %+v, want absent: the number must be no host process's", ct.Inner, p)
	}
	j := &verdict.Judge{Host: LocalHost(), Probe: &verdict.CachingProbe{Next: KernelProbe{}}}
	got := j.Judge(pidLockNow(ct.Inner))
	if got.Verdict != verdict.Unknown || !strings.Contains(got.Reason, "thread") {
		t.Errorf("Judge(pid file of container thread %d) = %s (%s), want unknown naming the thread", ct.Inner, got.Verdict, got.Reason)
	}
}

// TestNamesakesOfRechecksAThread: a question answered from the last look
// (the fork count held still) checks a thread it found there by the
// thread's own status: alive, it is a namesake; ended (its process runs
// on), it is not.
func TestNamesakesOfRechecksAThread(t *testing.T) {
	ct := testutil.StartContainerThread(t)
	holdForkCount(t)
	if _, err := (KernelProbe{}).Namesakes(); err != nil {
		t.Fatal(err)
	}
	if ns, err := (KernelProbe{}).NamesakesOf(ct.Inner); err != nil || !hasThread(ns, ct) {
		t.Fatalf("NamesakesOf(%d) from the last look = %+v, %v; want thread %d", ct.Inner, ns, err, ct.Tid)
	}
	ct.Stop(t)
	if ns, err := (KernelProbe{}).NamesakesOf(ct.Inner); err != nil || len(ns) != 0 {
		t.Errorf("NamesakesOf(%d) from the last look after the thread ended = %+v, %v; want none", ct.Inner, ns, err)
	}
	// A look made afresh agrees.
	if idx, err := (KernelProbe{}).Namesakes(); err != nil || len(idx[ct.Inner]) != 0 {
		t.Errorf("Namesakes()[%d] after the thread ended = %+v, %v; want none", ct.Inner, idx[ct.Inner], err)
	}
}

func hasThread(ns []verdict.Namesake, ct *testutil.ContainerThread) bool {
	for _, n := range ns {
		if n.Pid == ct.Tid && n.Leader == ct.Process.Pid && n.Inner == ct.Inner && n.NS == ct.Process.NS {
			return true
		}
	}
	return false
}

//go:build linux

package kernel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/internal/testutil"
	"github.com/lockctl/lockctl/verdict"
)

// named reports whether hs has pid.
func namesPid(hs []verdict.KernelHolder, pid int) bool {
	for _, h := range hs {
		if h.Pid == pid {
			return true
		}
	}
	return false
}

// TestKernelEvidenceThreadOwnFdTable: a thread that gave itself a
// descriptor table of its own (unshare(CLONE_FILES)) holds the file open;
// the leader's table, /proc/<pid>/fd, does not show it. The look names the
// process, or says it did not see everything: never "nobody", complete.
func TestKernelEvidenceThreadOwnFdTable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.lock")
	mkEmpty(t, p, "")
	pid, tid := testutil.StartPrivateFdThread(t, p)
	dev, ino := statDevIno(t, p)
	hs, complete := holders(t, dev, ino)
	switch {
	case namesPid(hs, pid):
	case complete:
		t.Fatalf("thread %d of pid %d holds %s open in a table of its own, yet Holders = %+v with a complete look", tid, pid, p, hs)
	case os.Geteuid() == 0:
		t.Fatalf("as root, Holders = %+v, incomplete, want pid %d named", hs, pid)
	}
	if os.Geteuid() == 0 && !namesPid(hs, pid) {
		t.Errorf("Holders = %+v, want pid %d (its thread %d has the file open)", hs, pid, tid)
	}
}

// TestKernelEvidenceFreshOpenedSince: with Fresh, the open files are looked
// at again for every question, so a process that opened the file since the
// first question is seen; without it, the first look stands for the run.
func TestKernelEvidenceFreshOpenedSince(t *testing.T) {
	dir := t.TempDir()
	first, p := filepath.Join(dir, "first.lock"), filepath.Join(dir, "x.lock")
	mkEmpty(t, first, "")
	mkEmpty(t, p, "")
	fd, fi := statDevIno(t, first)
	dev, ino := statDevIno(t, p)
	fresh, once := &KernelEvidence{Fresh: true}, &KernelEvidence{}
	for _, k := range []*KernelEvidence{fresh, once} {
		if hs, _ := k.Holders(fd, fi); len(hs) != 0 {
			t.Fatalf("Holders(first) = %+v, want none", hs)
		}
	}
	h := testutil.StartHolder(t, "open", p)
	if hs, _ := fresh.Holders(dev, ino); !sameHolders(hs, []verdict.KernelHolder{{Pid: h.Pid, Comm: evComm, How: "open"}}) {
		t.Errorf("Fresh: Holders = %+v, want pid %d, open", hs, h.Pid)
	}
	if unseen, others := fresh.Unseen(); others && !testutil.OnlyHidden(unseen) && os.Geteuid() == 0 {
		t.Logf("Fresh: the second look missed %v (processes exiting meanwhile)", unseen)
	}
	if hs, _ := once.Holders(dev, ino); len(hs) != 0 {
		t.Errorf("not Fresh: Holders = %+v, want none (the open files are looked at once per run)", hs)
	}
}

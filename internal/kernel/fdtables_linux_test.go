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

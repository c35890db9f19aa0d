//go:build linux

package kernel

import (
	"os"
	"os/exec"
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

// privateTableChurn is a C program whose leader never has argv[1] open:
// a second thread gives itself a descriptor table of its own
// (unshare(CLONE_FILES)), opens argv[1] there, says "ready", and then
// starts the next thread (which shares that table) and exits, over and
// over, as threadChurn does. At any moment the file is held in a table
// that /proc/<pid>/fd never shows, by a thread that may be gone by the
// time it is looked at.
const privateTableChurn = `#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
static const char *path;
static void *run(void *a) {
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	while (pthread_create(&t, &at, run, 0) != 0)
		;
	return a;
}
static void *first(void *a) {
	if (unshare(CLONE_FILES) != 0) _exit(4);
	if (open(path, O_RDONLY) < 0) _exit(2);
	printf("ready\n");
	fflush(stdout);
	return run(a);
}
int main(int argc, char **argv) {
	pthread_t t;
	if (argc < 2) return 1;
	path = argv[1];
	if (pthread_create(&t, 0, first, 0) != 0) return 3;
	for (;;) pause();
}
`

// TestEvidencePrivateTableChurn: a file held in a thread's own table, by
// threads that keep replacing each other, is found or the look says it did
// not see everything: a thread that went before its table could be told
// is never taken to have held nothing.
func TestEvidencePrivateTableChurn(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc): .ci/run installs gcc")
	}
	dir := t.TempDir()
	file, src, bin := filepath.Join(dir, "held.lock"), filepath.Join(dir, "churn.c"), filepath.Join(dir, "churn")
	mkEmpty(t, file, "")
	if err := os.WriteFile(src, []byte(privateTableChurn), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, file)
	if line, err := startReady(t, cmd); err != nil {
		t.Fatalf("the program said %q, %v", line, err)
	}
	pid := cmd.Process.Pid
	dev, ino := statDevIno(t, file)
	found, unsure := 0, 0
	for range 100 {
		hs, complete := seenButHidden{&KernelEvidence{}}.Holders(dev, ino)
		switch {
		case namesPid(hs, pid):
			found++
		case !complete:
			unsure++
		default:
			t.Fatalf("pid %d holds %s open in a thread's own table, yet the evidence found %+v and called its look complete", pid, file, hs)
		}
	}
	t.Logf("found %d times, incomplete %d times", found, unsure)
}

//go:build linux

package kernel

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
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
	fresh, once := &KernelEvidence{Fresh: true}, &KernelEvidence{}
	p := afterAFirstQuestion(t, fresh, once)
	dev, ino := statDevIno(t, p)
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
	bin := buildC(t, privateTableChurn)
	file := filepath.Join(t.TempDir(), "held.lock")
	mkEmpty(t, file, "")
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

// TestListedAll: a listing of a process's threads shorter than the count
// its stat gives after it (TestEvidencePrivateTableChurn makes one only
// when the race goes that way) is not the whole process, nor is any
// listing beside a stat line whose count cannot be read.
func TestListedAll(t *testing.T) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	n, ok := statField(stat, 20)
	if !ok || n == "1" {
		t.Fatalf("this Go test runs %q threads, want several", n)
	}
	if listedAll([]string{fmt.Sprint(os.Getpid())}, stat) {
		t.Errorf("one thread listed of %s counted was called the whole process", n)
	}
	many := make([]string, 1<<16)
	if !listedAll(many, stat) {
		t.Errorf("%d threads listed of %s counted was not called the whole process", len(many), n)
	}
	if listedAll(many, []byte("1 (x) S")) {
		t.Errorf("a stat line with no thread count was trusted")
	}
}

// exitingThread is a C program whose second thread says "ready <tid>",
// then exits once a line comes on stdin; the leader waits for ever.
const exitingThread = `#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static void *run(void *a) {
	char b[8];
	printf("ready %d\n", gettid());
	fflush(stdout);
	if (read(0, b, 1) < 0) return a;
	return a;
}
int main(void) {
	pthread_t t;
	if (pthread_create(&t, 0, run, 0) != 0) return 3;
	for (;;) pause();
}
`

// TestEvidenceExitingThreadUnseen: a thread that is exiting has let go of
// its descriptor table, or is about to, and /proc shows it none, while a
// thread it started may hold that table on. Such a thread is held here as
// it exits (a tracer, this test, has not reaped it): its empty table is
// never taken for its files, so the process counts as unseen.
func TestEvidenceExitingThreadUnseen(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it traces a thread of another process")
	}
	cmd := exec.Command(buildC(t, exitingThread))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := testutil.ReadLine(t, testutil.ReadyWait, fmt.Sprintf("the exiting-thread program (pid %d) to say ready", cmd.Process.Pid), bufio.NewReader(out))
	var tid int
	if _, err2 := fmt.Sscanf(line, "ready %d", &tid); err != nil || err2 != nil {
		t.Fatalf("the program said %q: %v %v", line, err, err2)
	}
	pid := cmd.Process.Pid

	// Trace the thread from one OS thread (a tracer is a thread), let it
	// exit, and reap it at the end, from the same thread.
	traced, reap := make(chan error, 1), make(chan struct{})
	reaped := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := unix.PtraceSeize(tid)
		traced <- err
		if err != nil {
			close(reaped)
			return
		}
		<-reap
		var ws unix.WaitStatus
		_, _ = unix.Wait4(tid, &ws, unix.WALL, nil)
		close(reaped)
	}()
	if err := testutil.Await(t, testutil.ReadyWait, fmt.Sprintf("PTRACE_SEIZE of thread %d", tid), traced); err != nil {
		t.Fatalf("PTRACE_SEIZE %d: %v", tid, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the reap then returns
		close(reap)
		testutil.Await(t, testutil.KillWait, fmt.Sprintf("the traced thread %d of the SIGKILLed pid %d to be reaped", tid, pid), reaped)
	})
	if _, err := stdin.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid)
	testutil.WaitFor(t, 10*time.Second, "the traced thread to exit", func() bool {
		b, err := os.ReadFile(stat)
		state, _, _, perr := ParseStat(b)
		return err == nil && perr == nil && state == 'Z'
	})
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task/%d/fd", pid, tid)); err != nil || len(ents) != 0 {
		t.Fatalf("the exited thread's fd directory: %d entries, %v; want none", len(ents), err)
	}
	unseen, _ := (&KernelEvidence{}).Unseen()
	if !slices.Contains(unseen, pid) {
		t.Errorf("Unseen() = %v, want pid %d among them: its thread %d is exiting and shows no table", unseen, pid, tid)
	}
}

//go:build linux

package kernel

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/verdict"
)

// leaderExited is a C program whose main thread opens argv[1], starts a
// thread that never returns, says "ready", and calls pthread_exit: the
// process runs on, and /proc/<pid>/stat shows its leader as Z.
const leaderExited = `#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static void *run(void *a) { for (;;) pause(); return a; }
int main(int argc, char **argv) {
	pthread_t t;
	if (argc > 1 && open(argv[1], O_RDONLY) < 0) return 2;
	if (pthread_create(&t, 0, run, 0) != 0) return 3;
	printf("ready\n");
	fflush(stdout);
	pthread_exit(0);
}
`

// threadChurn is leaderExited whose other thread starts the next thread and
// exits, over and over: at any moment the file is held by a thread that may
// be gone by the time it is looked at.
const threadChurn = `#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static void *run(void *a) {
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	while (pthread_create(&t, &at, run, 0) != 0)
		;
	return a;
}
int main(int argc, char **argv) {
	pthread_t t;
	if (argc > 1 && open(argv[1], O_RDONLY) < 0) return 2;
	if (pthread_create(&t, 0, run, 0) != 0) return 3;
	printf("ready\n");
	fflush(stdout);
	pthread_exit(0);
}
`

// startLeaderExited builds and starts leaderExited holding file open, and
// waits until its leader shows Z. Cleanup kills and reaps it.
func startLeaderExited(t *testing.T, file string) int {
	t.Helper()
	return startC(t, leaderExited, file)
}

// buildC compiles the C program src (with -pthread) and returns the
// binary, or skips the test where there is no C compiler: some of what the
// kernel must be asked about (a leader that exits before its threads, a
// thread with a table of its own) cannot be made from Go.
func buildC(t *testing.T, src string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc): .ci/run installs gcc")
	}
	dir := t.TempDir()
	file, bin := filepath.Join(dir, "prog.c"), filepath.Join(dir, "prog")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-pthread", "-o", bin, file).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return bin
}

// startC builds the C program src and starts it with file, then waits
// until it says ready and its leader shows Z.
func startC(t *testing.T, src0, file string) int {
	t.Helper()
	cmd := exec.Command(buildC(t, src0), file)
	if line, err := startReady(t, cmd); err != nil {
		t.Fatalf("the program said %q, %v", line, err)
	}
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if state, _, _, err := ParseStat(b); err == nil && state == 'Z' {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader of pid %d did not exit within 10s: %q", pid, b)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestProbeLeaderExited: a process whose main thread has exited while
// another runs shows Z in /proc/<pid>/stat, but it is alive: it holds its
// locks, and the files it has open are its.
func TestProbeLeaderExited(t *testing.T) {
	file := filepath.Join(t.TempDir(), "held.lock")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pid := startLeaderExited(t, file)

	p := KernelProbe{}.Probe(pid)
	if p.State != verdict.StateRunning || !p.HasStart {
		t.Errorf("Probe(%d) = %+v, want running with a start time: only its main thread has exited", pid, p)
	}
	if exited(pid) {
		t.Errorf("exited(%d) = true, want false: its threads run on", pid)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	hs, _ := (&KernelEvidence{}).Holders(st.Dev, st.Ino)
	found := false
	for _, h := range hs {
		found = found || h.Pid == pid
	}
	if !found {
		t.Errorf("Holders(%s) = %+v, want pid %d, whose threads hold it open", file, hs, pid)
	}
}

func TestStatExited(t *testing.T) {
	// Field 3 is the state, field 20 the thread count.
	line := func(state string, threads string) []byte {
		return []byte("42 (a b) c) " + state + " 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 " + threads + " 0 12345 0 0")
	}
	for _, tc := range []struct {
		b     []byte
		state byte
		want  bool
	}{
		{line("Z", "1"), 'Z', true},
		{line("X", "1"), 'X', true},
		{line("Z", "0"), 'Z', true},
		{line("Z", "2"), 'Z', false},
		{line("X", "3"), 'X', false},
		{line("S", "1"), 'S', false},
		{line("R", "1"), 'R', false},
		{line("Z", "x"), 'Z', false},           // an unreadable count is doubt
		{[]byte("42 (a) Z 1 2 3"), 'Z', false}, // too short: doubt
	} {
		if got := statExited(tc.b, tc.state); got != tc.want {
			t.Errorf("statExited(%q, %q) = %v, want %v", tc.b, tc.state, got, tc.want)
		}
	}
}

func TestParseBootOffset(t *testing.T) {
	for _, tc := range []struct {
		in    string
		ticks int64
		want  int64
		bad   bool
	}{
		{"monotonic 0 0\nboottime 0 0\n", 100, 0, false},
		{"monotonic 5 0\nboottime 100000 0\n", 100, 10_000_000, false},
		{"boottime -7 500000000\n", 100, -650, false},
		{"boottime 1 20000000\n", 100, 102, false},
		{"boottime 1 5000000\n", 100, 0, true}, // half a tick
		{"boottime 1 1\n", 1000, 0, true},
		{"monotonic 0 0\n", 100, 0, true},
		{"boottime x 0\n", 100, 0, true},
		{"boottime 1 1000000000\n", 100, 0, true},
		{"", 100, 0, true},
	} {
		got := parseBootOffset([]byte(tc.in), tc.ticks)
		if (got.err != nil) != tc.bad || got.ticks != tc.want {
			t.Errorf("parseBootOffset(%q, %d) = %d ticks, %v; want %d, error %v", tc.in, tc.ticks, got.ticks, got.err, tc.want, tc.bad)
		}
	}
}

// TestEvidenceThreadChurn: a process whose leader has exited and whose
// threads keep replacing each other holds its file open all along. The
// kernel evidence may fail to see it, but must then say it did not see
// everything: never "no holder" with a complete look.
func TestEvidenceThreadChurn(t *testing.T) {
	file := filepath.Join(t.TempDir(), "held.lock")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pid := startC(t, threadChurn, file)
	var st syscall.Stat_t
	if err := syscall.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	found, unsure := 0, 0
	for range 100 {
		hs, complete := seenButHidden{&KernelEvidence{}}.Holders(st.Dev, st.Ino)
		switch {
		case len(hs) > 0:
			found++
		case !complete:
			unsure++
		default:
			t.Fatalf("pid %d holds %s open, yet the evidence found no holder and called its look complete", pid, file)
		}
	}
	t.Logf("found %d times, incomplete %d times", found, unsure)
}

// TestRetryTablesLostEveryTime: a live process whose thread tables were
// lost on every attempt (TestEvidenceThreadChurn makes that happen only
// when the race goes that way) is unseen, never seen with nothing open.
func TestRetryTablesLostEveryTime(t *testing.T) {
	tries := 0
	lost := func(int) (bool, bool) { tries++; return false, true }
	if retryTables(os.Getpid(), lost) {
		t.Fatalf("a live process whose tables were lost %d times in a row was called seen", tries)
	}
	if tries < 2 {
		t.Errorf("tried %d times, want the look taken again", tries)
	}
	if !retryTables(math.MaxInt32, lost) {
		t.Errorf("a process that has exited was called unseen")
	}
}

// startReady starts cmd, killed and reaped at cleanup, and waits for the
// first line of its output, which must be "ready".
func startReady(t *testing.T, cmd *exec.Cmd) (string, error) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := testutil.ReadLine(t, testutil.ReadyWait, fmt.Sprintf("%q (pid %d) to say ready", cmd.Args, cmd.Process.Pid), bufio.NewReader(out))
	if err == nil && line != "ready\n" {
		err = fmt.Errorf("not ready")
	}
	return line, err
}

//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/cli"
)

// TestHolderPidRefusesAThread: --holder-pid names a process. A thread id
// that is not its process's leader is refused, naming the process: a lock
// recorded for it would read gone when the thread exits while the process
// that took it runs on (issue 41, item 6).
func TestHolderPidRefusesAThread(t *testing.T) {
	r := lcNewReaper(t)
	self := os.Getpid()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	tid := 0
	for _, e := range ents {
		if n, _ := strconv.Atoi(e.Name()); n != 0 && n != self {
			tid = n
			break
		}
	}
	if tid == 0 {
		t.Fatal("the test binary has no thread but its leader")
	}
	l := filepath.Join(t.TempDir(), "x.lock")
	res := r.lockctl(nil, "acquire", "--holder-pid", strconv.Itoa(tid), l)
	if res.code != cli.ExitError || !strings.Contains(res.stderr, "thread of process "+strconv.Itoa(self)) {
		t.Fatalf("acquire --holder-pid %d (a thread of %d): exit %d, want %d naming the process\n%s", tid, self, res.code, cli.ExitError, res.stderr)
	}
	if lcExists(l) {
		t.Errorf("acquire --holder-pid of a thread made %s", l)
	}
	r.mustLockctl(cli.ExitOK, "acquire", "--holder-pid", strconv.Itoa(self), l)
	r.mustLockctl(cli.ExitOK, "release", "--holder-pid", strconv.Itoa(self), l)
}

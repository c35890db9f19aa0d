//go:build linux

package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"golang.org/x/sys/unix"
)

// FileLocks against real locks held by real processes, asked from a child
// pid namespace with its own /proc, whose /proc/locks does not list them
// (issue 28, case 2): the question about the one file, which no namespace
// filters, must see them all the same.

const (
	flRoleEnv   = "LOCKCTL_FILELOCKS_TEST_ROLE"
	flQueryEnv  = "LOCKCTL_FILELOCKS_TEST_QUERY"
	flResultTag = "lockctl-filelocks-result:"
)

type flResult struct {
	Held, Known bool
	How         string
	// Listed says whether this process's /proc/locks lists a lock on the
	// file; Whole, whether its lock table counts as the whole machine's.
	Listed, Whole bool
}

// TestFileLocksHelperProcess is not a test: it is the process that asks
// FileLocks from where a test puts it (a child pid namespace), about the
// file in $LOCKCTL_FILELOCKS_TEST_QUERY ("take|look dir name dev ino"), and
// prints the answer.
func TestFileLocksHelperProcess(t *testing.T) {
	if os.Getenv(flRoleEnv) != "filelocks" {
		t.Skip("not a test: the process the FileLocks tests start")
	}
	var mode, dir, name string
	var dev, ino uint64
	if _, err := fmt.Sscanf(os.Getenv(flQueryEnv), "%s %s %s %d %d", &mode, &dir, &name, &dev, &ino); err != nil {
		fmt.Fprintf(os.Stderr, "helper filelocks: %v\n", err)
		os.Exit(3)
	}
	held, how, known := FileLocks{Take: mode == "take"}.FileLocked(dir, name, dev, ino)
	tab := readLockTable()
	r := flResult{Held: held, Known: known, How: how, Listed: len(tab.held[devIno{dev, ino}]) > 0, Whole: tab.ok && tab.whole}
	b, _ := json.Marshal(r)
	fmt.Printf("%s%s\n", flResultTag, b)
	os.Exit(0)
}

// askFromContainer runs FileLocks (taking the flock when take) in a new
// child pid namespace with its own /proc, about path as dev:ino.
func askFromContainer(t *testing.T, take bool, path string, dev, ino uint64) flResult {
	t.Helper()
	mode := "look"
	if take {
		mode = "take"
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", "--mount-proc", testExe(t), "-test.run=^TestFileLocksHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), flRoleEnv+"=filelocks", fmt.Sprintf("%s=%s %s %s %d %d", flQueryEnv, mode, filepath.Dir(path), filepath.Base(path), dev, ino))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the asker in a child pid namespace: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(line, flResultTag); ok {
			var r flResult
			if err := json.Unmarshal([]byte(s), &r); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("no answer from the asker:\n%s", out)
	return flResult{}
}

func TestFileLocksFromAChildPidNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a pid namespace")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	type want struct {
		held, known bool
		how         string
	}
	for _, tc := range []struct {
		name, role string // role "" holds nothing
		dir        bool
		take, look want
	}{
		{name: "flock", role: "flock",
			take: want{true, true, "a flock is held on it"},
			look: want{false, false, "a flock cannot be seen without taking it"}},
		{name: "flock-dir", role: "flock", dir: true,
			take: want{true, true, "a flock is held on it"},
			look: want{false, false, "a flock cannot be seen without taking it"}},
		{name: "posix", role: "posix",
			take: want{true, true, "a POSIX lock (WRITE) is held on it by a process outside this pid namespace"},
			look: want{true, true, "a POSIX lock (WRITE) is held on it by a process outside this pid namespace"}},
		{name: "ofd", role: "ofd",
			take: want{true, true, "an OFD lock (WRITE) is held on it"},
			look: want{true, true, "an OFD lock (WRITE) is held on it"}},
		{name: "nothing",
			take: want{false, true, "no process holds a flock, POSIX or OFD lock on it"},
			look: want{false, false, "a flock cannot be seen without taking it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.lock")
			if tc.dir {
				testutil.Mkdir(t, p)
			} else {
				mkEmpty(t, p, "")
			}
			dev, ino := statDevIno(t, p)
			if tc.role != "" {
				testutil.StartHolder(t, tc.role, p)
				procLocksFor(t, dev, ino) // listed here, on the host
			}
			for _, take := range []bool{true, false} {
				w := tc.look
				if take {
					w = tc.take
				}
				got := askFromContainer(t, take, p, dev, ino)
				// An OFD lock is listed in every namespace (pid -1); no
				// other lock held from the host is listed in the child's.
				if got.Listed != (tc.role == "ofd") || got.Whole {
					t.Errorf("take=%v: the child's /proc/locks lists the lock: %v, is whole: %v; want listed only for an OFD lock, never whole", take, got.Listed, got.Whole)
				}
				if got.Held != w.held || got.Known != w.known || !strings.Contains(got.How, w.how) {
					t.Errorf("take=%v: FileLocked = %v, %q, %v; want %v, %q..., %v", take, got.Held, got.How, got.Known, w.held, w.how, w.known)
				}
			}
			// Taken and released at once: the lock is still free to take.
			if tc.role == "" {
				f, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
					t.Errorf("after FileLocked took and released it, the flock cannot be taken: %v", err)
				}
			}
		})
	}
}

// TestFileLocksNotTheFileJudged: FileLocks asks only about the inode
// judged, opens no FIFO, and follows no symbolic link: each is unknown.
func TestFileLocksNotTheFileJudged(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	mkEmpty(t, p, "")
	dev, ino := statDevIno(t, p)
	fifo := filepath.Join(dir, "fifo.lock")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	fdev, fino := statDevIno(t, fifo)
	if err := os.Symlink(p, filepath.Join(dir, "link.lock")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.lock")
	mkEmpty(t, other, "")
	for _, tc := range []struct {
		name     string
		dev, ino uint64
	}{
		{"other.lock", dev, ino}, // another inode at that name
		{"fifo.lock", fdev, fino},
		{"link.lock", dev, ino},
		{"missing.lock", dev, ino},
	} {
		for _, take := range []bool{true, false} {
			done := make(chan struct{})
			var held, known bool
			var how string
			go func() {
				held, how, known = FileLocks{Take: take}.FileLocked(dir, tc.name, tc.dev, tc.ino)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("FileLocked(%s) blocked", tc.name)
			}
			if held || known {
				t.Errorf("FileLocked(%s, take=%v) = %v, %q, %v; want not held, unknown", tc.name, take, held, how, known)
			}
		}
	}
	if held, how, known := (FileLocks{Take: true}).FileLocked(dir, "x.lock", dev, ino); held || !known {
		t.Errorf("FileLocked(x.lock) = %v, %q, %v; want free, known", held, how, known)
	}
}

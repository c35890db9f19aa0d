//go:build linux

package lock

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// endProcess kills and reaps c if it has not been reaped yet.
func endProcess(c *exec.Cmd) {
	if c.ProcessState == nil {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}

// killAndReap SIGKILLs c and reaps it: afterwards its pid names nothing.
func killAndReap(t *testing.T, c *exec.Cmd) {
	t.Helper()
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
}

// holderFor is the record Acquire would write for pid, changed by edit.
func holderFor(t *testing.T, pid int, edit func(*scan.Holder)) (scan.Holder, []byte) {
	t.Helper()
	h, err := holder(kern, Options{Kernel: kern, Pid: pid, Command: "holder-" + strconv.Itoa(pid)})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&h)
	}
	return h, encode(h)
}

// setPid makes h name pid, with a token of the shape that goes with it.
func setPid(h *scan.Holder, pid int) {
	h.Pid, h.PidText = int64(pid), strconv.Itoa(pid)
	h.Token = h.PidText + ".0123456789abcdef0123456789abcdef.1"
}

// writeLockDir makes the lockctl lock path holding record, as a lock that
// some other process took.
func writeLockDir(t *testing.T, path string, record []byte) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(path, "holder"), record)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// judgeDir judges every lock (and every group of side files) in the
// registry dir as lockctl doctor does.
func judgeDir(t *testing.T, dir string) []verdict.Result {
	t.Helper()
	m, err := scan.NewMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := scan.ResolveRoot(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	j := verdict.Judge{Host: localHost(), Probe: kernel.KernelProbe{}}
	var out []verdict.Result
	w := scan.Walker{Match: m, Found: func(l *scan.Lock) { out = append(out, j.Judge(l)) }, Warn: func(err error) { t.Errorf("walking %s: %v", dir, err) }}
	if err := w.Walk(root); err != nil {
		t.Fatal(err)
	}
	return out
}

// brief shortens a list of names for a message.
func brief(names []string) string {
	if len(names) > 6 {
		return fmt.Sprintf("%d entries: %q ...", len(names), names[:6])
	}
	return fmt.Sprintf("%q", names)
}

// dump lists everything below dir with inode, birth and modification
// times, and the content of records, for a failure message.
func dump(dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		var x unix.Statx_t
		if unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_ALL, &x) != nil {
			return nil
		}
		ts := func(t unix.StatxTimestamp) string {
			return time.Unix(t.Sec, int64(t.Nsec)).Format("15:04:05.000000000")
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "\n\t%s ino %d born %s modified %s", rel, x.Ino, ts(x.Btime), ts(x.Mtime))
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %q", data)
		}
		return nil
	})
	return b.String()
}

// describe renders judged results for a failure message.
func describe(rs []verdict.Result) string {
	var b strings.Builder
	for _, r := range rs {
		why := r.Reason
		if len(why) > 400 {
			why = why[:400] + "..."
		}
		fmt.Fprintf(&b, "\n\t%s: %s (%s)", r.Lock.Name, r.Verdict, why)
	}
	return b.String()
}

// sweep does what lockctl doctor --fix does to the registry dir and returns
// the outcomes by lock name.
func sweep(t *testing.T, dir string) map[string]fix.Outcome {
	t.Helper()
	f := fix.New(judges.Sweep(localHost()))
	out := map[string]fix.Outcome{}
	for _, r := range judgeDir(t, dir) {
		out[r.Lock.Name] = f.Fix(r)
		f.Debris(r) // as doctor --fix does
	}
	return out
}

// lineReader reads a child's output line by line in the background.
type lineReader struct{ lines chan string }

func readLines(r io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan string, 64)}
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			lr.lines <- s.Text()
		}
		close(lr.lines)
	}()
	return lr
}

// await waits for the line want, failing the test at EOF or after timeout.
func (lr *lineReader) await(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	var seen []string
	for {
		select {
		case l, ok := <-lr.lines:
			if !ok {
				t.Fatalf("the helper ended without printing %q; it printed %q", want, seen)
			}
			if l == want {
				return
			}
			seen = append(seen, l)
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %q; the helper printed %q", timeout, want, seen)
		}
	}
}

// acquireWithin acquires path for this process, failing the test if that
// takes longer than d.
func acquireWithin(t *testing.T, path string, d time.Duration) *Lock {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	l, err := Acquire(ctx, path, Options{Kernel: kern})
	if err != nil {
		t.Fatalf("Acquire(%s) = %v, want the lock within %s", path, err, d)
	}
	return l
}

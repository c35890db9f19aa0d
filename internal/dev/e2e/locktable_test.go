//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/scan"
	"golang.org/x/sys/unix"
)

// TestPartialLockTable: a reader in a child (or grandchild) pid namespace
// meets a lockctl lock whose holder died in its own namespace, and that a
// process it cannot see holds with flock: a host process, one whose taker
// has exited (an inherited descriptor), or a process of a sibling
// container. Its /proc/locks lists none of them, and that is no proof
// (issue 28, case 2): doctor says unknown, doctor --fix keeps the lock,
// and acquire waits and times out. With nobody holding a lock on it, the
// same reader's acquire breaks it and its doctor --fix removes it.
// needNamespaces skips t, saying why, unless it may make pid namespaces
// and enter them: root, with unshare and nsenter (util-linux).
func needNamespaces(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip(why)
	}
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s (util-linux)", tool)
		}
	}
}

func TestPartialLockTable(t *testing.T) {
	needNamespaces(t, "pid namespaces need root")
	_, bin := publicBin(t)
	child := testutil.StartContainer(t, testutil.FreePid(t), "exec sleep 600")
	// A container in a container: its payload is unshare, whose child is
	// the grandchild namespace's init.
	outer := testutil.StartContainer(t, testutil.FreePid(t, child.Inner), "exec unshare --pid --fork --kill-child --mount-proc sleep 600")
	var grandchild int
	testutil.WaitFor(t, 10*time.Second, "the grandchild namespace's init", func() bool {
		for _, k := range lcChildren(outer.Pid) {
			if ns := testutil.NSpid(strconv.Itoa(k)); len(ns) == 3 && ns[2] == "1" && strings.Contains(readText("/proc/"+strconv.Itoa(k)+"/comm"), "sleep") {
				grandchild = k
			}
		}
		return grandchild > 0
	})
	readers := []struct {
		name string
		pid  int // a process of the reader's namespace, on the host
	}{
		{"child", child.Pid},
		{"grandchild", grandchild},
	}
	flockers := []string{"host", "host-taker-exited", "sibling-container", "nobody"}
	for _, r := range readers {
		for _, fl := range flockers {
			t.Run(r.name+"/"+fl, func(t *testing.T) {
				in := func(args ...string) *exec.Cmd {
					return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(r.pid), "-p", "-m"}, args...)...)
				}
				dir := t.TempDir()
				a, b := filepath.Join(dir, "a.lock"), filepath.Join(dir, "b.lock")
				// The holder, a shell of the reader's namespace, takes both
				// locks and exits.
				if out, code := runAs(t, in("sh", "-c", `"$0" acquire "$1" && "$0" acquire "$2"`, bin, a, b)); code != 0 {
					t.Fatalf("the holder in the %s namespace could not take its locks: exit %d\n%s", r.name, code, out)
				}
				for _, l := range []string{a, b} {
					if _, err := os.Stat(filepath.Join(l, "holder")); err != nil {
						t.Fatalf("no record in %s: %v", l, err)
					}
				}
				flocked := flockBoth(t, fl, a, b)
				before := testutil.Snapshot(t, dir)
				judge := func(args ...string) (verdict, reason, action string) {
					t.Helper()
					out, _ := runAs(t, in(append([]string{bin, "doctor", "--json"}, args...)...))
					var doc struct {
						Locks []struct{ Path, Verdict, Reason, Action string }
					}
					if err := json.Unmarshal(out, &doc); err != nil {
						t.Fatalf("doctor %v: %v\n%s", args, err, out)
					}
					for _, l := range doc.Locks {
						if l.Path == a {
							return l.Verdict, l.Reason, l.Action
						}
					}
					t.Fatalf("doctor %v did not judge %s:\n%s", args, a, out)
					return "", "", ""
				}

				// Doctor takes no lock, so it cannot see a flock: unknown.
				if v, why, _ := judge(a); v != "unknown" || !strings.Contains(why, "judge it from the host, or with --fix") {
					t.Errorf("doctor in the %s namespace: %s (%s), want unknown", r.name, v, why)
				}
				testutil.Untouched(t, dir, before)

				out, code := runAs(t, in("sh", "-c", `"$0" acquire --timeout 1s "$1"; echo "exit $?"`, bin, b))
				v, why, action := judge("--fix", a)
				if flocked {
					if !strings.Contains(string(out), "exit 75") {
						t.Errorf("acquire in the %s namespace of a lock held with flock from outside it: want exit 75 (timed out)\n%s", r.name, out)
					}
					if v != "live" || action != "skipped" {
						t.Errorf("doctor --fix in the %s namespace: %s, %s (%s); want live, skipped", r.name, v, action, why)
					}
					after := testutil.Snapshot(t, dir)
					for _, l := range []string{a, b} {
						if d := changed(dir, l, before, after); d != "" {
							t.Errorf("%s, held with flock, changed: %s", l, d)
						}
					}
					return
				}
				// Nobody holds it: its holder crashed here, and this
				// namespace's acquire and --fix may take it.
				if code != 0 || !strings.Contains(string(out), "exit 0") {
					t.Errorf("acquire in the %s namespace of a lock whose holder died there, that nobody holds: want exit 0\n%s", r.name, out)
				}
				if v != "gone" || action != "removed" {
					t.Errorf("doctor --fix in the %s namespace: %s, %s (%s); want gone, removed", r.name, v, action, why)
				}
				testutil.WantNames(t, dir, "b.lock")
			})
		}
	}
}

// flockBoth has who hold flocks on the lock directories a and b, and
// reports whether anyone does. It returns once the host's /proc/locks
// shows both.
func flockBoth(t *testing.T, who, a, b string) bool {
	t.Helper()
	switch who {
	case "nobody":
		return false
	case "host":
		testutil.StartHolder(t, "flock", a)
		testutil.StartHolder(t, "flock", b)
	case "host-taker-exited":
		// The taker exits; a process that inherited the descriptor holds
		// the lock. A child namespace's /proc/locks drops such an entry.
		for _, l := range []string{a, b} {
			f, err := os.Open(l)
			if err != nil {
				t.Fatal(err)
			}
			testutil.StartHolder(t, "hold-fd3", l, f)
			testutil.StartHolder(t, "flock-fd3-and-exit", l, f).Exited(t)
			f.Close()
		}
	case "sibling-container":
		testutil.StartContainer(t, testutil.FreePid(t), fmt.Sprintf("exec flock -n %s flock -n %s sleep 600", a, b))
	}
	for _, l := range []string{a, b} {
		var st unix.Stat_t
		if err := unix.Stat(l, &st); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(" %02x:%02x:%d ", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
		testutil.WaitFor(t, 10*time.Second, "the flock on "+l, func() bool {
			return strings.Contains(readText("/proc/locks"), want)
		})
	}
	return true
}

func readText(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestPartialLockTableClaimed: the claimed-record check of issue 28, case
// 2. A break by a doctor --fix of a container, killed after its claim,
// leaves the record of a holder that died there claimed out of the lock;
// meanwhile a host process flocks the lock directory. The container's
// doctor --fix must put the record back (the lock is in use), never finish
// the break, and its acquire must time out.
func TestPartialLockTableClaimed(t *testing.T) {
	needNamespaces(t, "pid namespaces need root")
	_, bin := publicBin(t)
	c := testutil.StartContainer(t, testutil.FreePid(t), "exec sleep 600")
	in := func(args ...string) *exec.Cmd {
		return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(c.Pid), "-p", "-m"}, args...)...)
	}
	dir := t.TempDir()
	l := filepath.Join(dir, "a.lock")
	if out, code := runAs(t, in("sh", "-c", `"$0" acquire "$1"`, bin, l)); code != 0 {
		t.Fatalf("the holder in the container could not take its lock: exit %d\n%s", code, out)
	}
	record, err := os.ReadFile(filepath.Join(l, "holder"))
	if err != nil {
		t.Fatal(err)
	}

	// A breaker of the container claims the record, and is killed there.
	br := in("env", pauseEnv+"=fix-judge", bin, "doctor", "--fix", dir)
	br.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/", "NO_COLOR=1"}
	stderr, err := br.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	paused := make(chan bool, 1)
	go func() {
		b := make([]byte, 4096)
		var got []byte
		for {
			n, err := stderr.Read(b)
			got = append(got, b[:n]...)
			if strings.Contains(string(got), "paused at fix-judge") {
				paused <- true
				return
			}
			if err != nil {
				paused <- false
				return
			}
		}
	}()
	select {
	case ok := <-paused:
		if !ok {
			_ = br.Wait()
			t.Fatalf("the breaker ended before its claim")
		}
	case <-time.After(30 * time.Second):
		killWithChildren(br.Process)
		_ = br.Wait()
		t.Fatalf("the breaker did not reach its claim within 30s")
	}
	killWithChildren(br.Process)
	_ = br.Wait()
	claims, _ := filepath.Glob(l + ".dead.*")
	if len(claims) != 1 {
		t.Fatalf("want one claim beside the lock after the breaker was killed, have %q", claims)
	}

	testutil.StartHolder(t, "flock", l)
	var st unix.Stat_t
	if err := unix.Stat(l, &st); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(" %02x:%02x:%d ", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	testutil.WaitFor(t, 10*time.Second, "the host's flock", func() bool { return strings.Contains(readText("/proc/locks"), want) })

	out, _ := runAs(t, in(bin, "doctor", "--fix", "--json", dir))
	var doc struct {
		Locks []struct{ Path, Verdict, Reason, Action string }
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Locks) != 1 {
		t.Fatalf("doctor --fix in the container: %v\n%s", err, out)
	}
	if got := doc.Locks[0]; got.Verdict != "claimed" || got.Action != "restored" || !strings.Contains(got.Reason, "the record it holds is live") {
		t.Errorf("doctor --fix in the container: %s, %s (%s); want claimed, restored: the record is live, for a host process flocks the lock", got.Verdict, got.Action, got.Reason)
	}
	if _, err := os.Stat(l); err != nil {
		t.Fatalf("the lock directory a host process flocks was removed: %v", err)
	}
	out, _ = runAs(t, in("sh", "-c", `"$0" acquire --timeout 1s "$1"; echo "exit $?"`, bin, l))
	if !strings.Contains(string(out), "exit 75") {
		t.Errorf("acquire in the container of a lock a host process flocks: want exit 75 (timed out)\n%s", out)
	}
	// The record is back where it was, and the claim gone.
	if got, err := os.ReadFile(filepath.Join(l, "holder")); err != nil || string(got) != string(record) {
		t.Errorf("the record of the flocked lock is not back: %v\n%s", err, got)
	}
	testutil.WantNames(t, dir, "a.lock")
}

// TestUnreadLockTable: a reader in the host's pid namespace whose /proc is
// a container's (nsenter --mount into it) cannot read the kernel's lock
// table at all (its /proc/locks numbers another namespace's pids, and lists
// only that namespace's locks). Its finding no lock proves nothing (issue
// 28, case 2): a lockctl lock of another boot that a host process flocks
// reads unknown in its doctor and live in its --fix, which keeps it.
func TestUnreadLockTable(t *testing.T) {
	needNamespaces(t, "pid namespaces need root")
	_, bin := publicBin(t)
	c := testutil.StartContainer(t, testutil.FreePid(t), "exec sleep 600")
	dir := t.TempDir()
	// A kernel-lock file (lockctl's record: held only by a kernel lock),
	// which the host flocks: free only by a lock table that covers it.
	// (Once this was a lockctl record of another boot, gone by its boot id
	// whatever pid space the reader saw; a reader with another
	// namespace's /proc cannot read its own pid namespace, and now never
	// takes a boot-id mismatch for gone there.)
	l := filepath.Join(dir, "x.lock")
	testutil.WriteFile(t, l, []byte(scan.KernelRecord))
	testutil.StartHolder(t, "flock", l)
	var st unix.Stat_t
	if err := unix.Stat(l, &st); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(" %02x:%02x:%d ", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	testutil.WaitFor(t, 10*time.Second, "the host's flock", func() bool { return strings.Contains(readText("/proc/locks"), want) })
	before := testutil.Snapshot(t, dir)
	for _, args := range [][]string{{"doctor", "--json", dir}, {"doctor", "--fix", "--json", dir}} {
		out, _ := runAs(t, exec.Command("nsenter", append([]string{"-t", strconv.Itoa(c.Pid), "-m", bin}, args...)...))
		var doc struct {
			Locks []struct{ Path, Verdict, Reason, Action string }
		}
		if err := json.Unmarshal(out, &doc); err != nil || len(doc.Locks) != 1 {
			t.Fatalf("%v with a container's /proc: %v\n%s", args, err, out)
		}
		got := doc.Locks[0]
		wantV := "unknown"
		if args[1] == "--fix" {
			wantV = "live" // its flock, taken for an instant, was refused
		}
		if got.Verdict != wantV || got.Action == "removed" {
			t.Errorf("%v with a container's /proc: %s, %s (%s); want %s, not removed", args, got.Verdict, got.Action, got.Reason, wantV)
		}
	}
	testutil.Untouched(t, dir, before)
}

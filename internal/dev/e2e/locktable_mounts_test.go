//go:build linux

package e2e

import (
	"bufio"
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
)

// The kernel's lock table names a file by its file system's superblock
// device, which is not always the file's st_dev (btrfs, overlayfs), and
// /proc/locks is only a path, over which anything can be mounted (issue 28,
// review findings F1 and F2). A lock held there must never read gone.

// waitLine reports whether r gives the line want within timeout.
func waitLine(r interface{ Read([]byte) (int, error) }, want string, timeout time.Duration) bool {
	got := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if sc.Text() == want {
				got <- true
				return
			}
		}
		got <- false
	}()
	select {
	case ok := <-got:
		return ok
	case <-time.After(timeout):
		return false
	}
}

// flockIn has a process of the mount namespace of pid (0: the host's) take
// a flock on path and hold it until the test ends. It returns, once the
// lock is taken, the pid of flock(1), which took it; flock -F (no fork)
// execs the holding command in its place, so that pid holds the descriptor
// too, and is the second pid returned. One process, tied to this one
// (testutil.StartTied): it dies with the test binary, however that ends,
// and so lets go of the mount namespace it is in.
func flockIn(t *testing.T, pid int, path string) [2]int {
	t.Helper()
	args := []string{"flock", "-n", "-F", path, "sh", "-c", "echo locked; exec sleep 600"}
	if pid > 0 {
		args = append([]string{"nsenter", "-t", strconv.Itoa(pid), "-m"}, args...)
	}
	c := exec.Command(args[0], args[1:]...)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.StartTied(c); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	t.Cleanup(func() {
		_ = c.Process.Kill()
		testutil.Await(t, testutil.KillWait, fmt.Sprintf("the flock holder (pid %d) of %s to be reaped after its SIGKILL", c.Process.Pid, path), waited)
	})
	if !waitLine(out, "locked", 10*time.Second) {
		go func() { _ = c.Wait(); close(waited) }()
		t.Fatalf("flock on %s was not taken", path)
	}
	go func() { _ = c.Wait(); close(waited) }()
	return [2]int{c.Process.Pid, c.Process.Pid}
}

type mountDoc struct {
	Locks []struct{ Path, Verdict, Reason, Action string }
}

// doctorIn runs lockctl doctor --json with args in the mount namespace of
// pid (every reader here is in the initial pid namespace) and returns the
// locks it judged, by path.
func doctorIn(t *testing.T, pid int, bin string, args ...string) map[string]struct{ Verdict, Reason, Action string } {
	t.Helper()
	c := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(pid), "-m", bin, "doctor", "--json"}, args...)...)
	out, _ := runAs(t, c)
	var doc mountDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("doctor %v: %v\n%s", args, err, out)
	}
	got := map[string]struct{ Verdict, Reason, Action string }{}
	for _, l := range doc.Locks {
		got[l.Path] = struct{ Verdict, Reason, Action string }{l.Verdict, l.Reason, l.Action}
	}
	return got
}

func needRootTools(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: mount namespaces and mounts")
	}
	for _, tool := range append([]string{"unshare", "nsenter", "flock"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

// TestBtrfsLockTable: on btrfs every subvolume (the top-level one too)
// reports a device of its own in st_dev, while /proc/locks lists every
// file under the superblock's. A lockctl lock whose holder died, that a
// live process flocks, in a subvolume and in the top-level subvolume: doctor
// --fix keeps both as live, naming the flocker, and acquire times out
// (exit 75). An owner-less lock file flocked there is live too (the index
// of open files, keyed by the st_dev of each descriptor's file, agrees).
func TestBtrfsLockTable(t *testing.T) {
	needRootTools(t, "losetup")
	if _, err := exec.LookPath("mkfs.btrfs"); err != nil {
		t.Skip("mkfs.btrfs is not installed (btrfs-progs)")
	}
	_, bin := publicBin(t)
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "btrfs.img"), filepath.Join(dir, "m")
	testutil.Mkdir(t, mnt)
	ns := mountNS(t, fmt.Sprintf("truncate -s 300M %[1]s && mkfs.btrfs -q %[1]s && mount -o loop %[1]s %[2]s && btrfs -q subvolume create %[2]s/sub", img, mnt))
	in := func(args ...string) *exec.Cmd {
		return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(ns), "-m"}, args...)...)
	}
	sub, top := filepath.Join(mnt, "sub", "app.lock"), filepath.Join(mnt, "top.lock")
	empty := filepath.Join(mnt, "sub", "e.lock")
	// A kernel-lock file lockctl made, flocked: free only if no lock on
	// it is listed, and the timeout names who holds it.
	klock := filepath.Join(mnt, "sub", "k.lock")
	for _, l := range []string{sub, top} {
		if out, code := runAs(t, in("sh", "-c", `"$0" acquire "$1"`, bin, l)); code != 0 {
			t.Fatalf("the holder could not take %s: exit %d\n%s", l, code, out)
		}
	}
	if out, code := runAs(t, in("sh", "-c", `: > "$0" && printf '`+strings.TrimSuffix(scan.KernelRecord, "\n")+`\n' > "$1"`, empty, klock)); code != 0 {
		t.Fatalf("cannot make %s, %s: %s", empty, klock, out)
	}
	var flockers []int
	for _, l := range []string{sub, top, empty, klock} {
		p := flockIn(t, ns, l)
		flockers = append(flockers, p[0], p[1])
	}
	// The table cannot tell subvolumes apart (each numbers its inodes from
	// 256): the flocker named may be another lock's, and is one of them.
	names := func(reason string) bool {
		for _, p := range flockers {
			if strings.Contains(reason, fmt.Sprintf("pid %d (", p)) {
				return true
			}
		}
		return false
	}
	got := doctorIn(t, ns, bin, "--fix", mnt)
	for _, l := range []string{sub, top, empty, klock} {
		g, ok := got[l]
		switch {
		case !ok:
			t.Errorf("doctor --fix did not judge %s", l)
		case g.Verdict != "live" || g.Action == "removed" || !names(g.Reason):
			t.Errorf("doctor --fix on btrfs: %s is %s, %s (%s); want live, kept, naming a flocker %v", l, g.Verdict, g.Action, g.Reason, flockers)
		}
	}
	if out, code := runAs(t, in("sh", "-c", `test -f "$0/holder" && test -f "$1/holder"`, sub, top)); code != 0 {
		t.Errorf("the records of the flocked locks are gone: %s", out)
	}
	for _, l := range []string{sub, top} {
		out, code := runAs(t, in(bin, "acquire", "--timeout", "1s", l))
		if code != 75 {
			t.Errorf("acquire --timeout 1s of %s, which a live process flocks: exit %d, want 75\n%s", l, code, out)
		}
	}
	out, code := runAs(t, in(bin, "run", "--kind", "flock", "--timeout", "1s", klock, "--", "true"))
	if code != 75 || !names(string(out)) {
		t.Errorf("run --kind flock --timeout 1s of %s, which a live process flocks: exit %d, want 75, naming a flocker %v\n%s", klock, code, flockers, out)
	}
}

// TestOverlayLockTable: on overlayfs whose layers are on other file
// systems, a file reports its layer's device, while /proc/locks lists it
// under the overlay's. Bare-pid locks of a gone pid, one from the lower
// layer (tmpfs) and one made in the upper (the test directory's file
// system), both flocked by a live process: doctor --fix keeps both (it asks
// each file itself, and its flock is refused). An owner-less (empty) lock
// file flocked there is live as well: the index of open files keys each
// descriptor's file by the device statx gives it, which is what stat of
// the path gives.
func TestOverlayLockTable(t *testing.T) {
	needRootTools(t)
	_, bin := publicBin(t)
	dir := t.TempDir()
	lower, upper, work, mnt := filepath.Join(dir, "l"), filepath.Join(dir, "u"), filepath.Join(dir, "w"), filepath.Join(dir, "m")
	for _, d := range []string{lower, upper, work, mnt} {
		testutil.Mkdir(t, d)
	}
	gone := testutil.Gone(t)
	ns := mountNS(t, fmt.Sprintf("mount -t tmpfs tmpfs %[1]s && echo %[5]d > %[1]s/b.lock && mount -t overlay overlay -o lowerdir=%[1]s,upperdir=%[2]s,workdir=%[3]s %[4]s && echo %[5]d > %[4]s/a.lock && : > %[4]s/e.lock", lower, upper, work, mnt, gone))
	a, b, e := filepath.Join(mnt, "a.lock"), filepath.Join(mnt, "b.lock"), filepath.Join(mnt, "e.lock")
	flockers := map[string][2]int{a: flockIn(t, ns, a), b: flockIn(t, ns, b), e: flockIn(t, ns, e)}
	got := doctorIn(t, ns, bin, "--fix", mnt)
	for _, l := range []string{a, b, e} {
		g, ok := got[l]
		switch {
		case !ok:
			t.Errorf("doctor --fix did not judge %s", l)
		case g.Verdict != "live" || g.Action == "removed":
			t.Errorf("doctor --fix on overlayfs: %s is %s, %s (%s); want live, kept (flocked by %v)", l, g.Verdict, g.Action, g.Reason, flockers[l])
		}
	}
	out, code := runAs(t, exec.Command("nsenter", "-t", strconv.Itoa(ns), "-m", "cat", a, b))
	if want := fmt.Sprintf("%d\n%d\n", gone, gone); code != 0 || string(out) != want {
		t.Errorf("the flocked locks changed: %q, want %q", out, want)
	}
}

// TestShadowedLockTable: a reader in the initial pid namespace, with its
// own /proc, but with a file mounted over /proc/locks: an empty file, or a
// child pid namespace's procfs's locks (which lists only that namespace's
// locks). A host process flocks a lockctl lock whose holder is gone: the
// reader's doctor says unknown, its --fix keeps the lock (live: the flock
// it tries is refused), and its acquire times out.
func TestShadowedLockTable(t *testing.T) {
	needRootTools(t)
	_, bin := publicBin(t)
	for _, over := range []string{"empty-file", "child-procfs"} {
		t.Run(over, func(t *testing.T) {
			dir := t.TempDir()
			reg := filepath.Join(dir, "reg")
			testutil.Mkdir(t, reg)
			l := filepath.Join(reg, "a.lock")
			if out, code := runAs(t, exec.Command("sh", "-c", `"$0" acquire "$1"`, bin, l)); code != 0 {
				t.Fatalf("the holder could not take its lock: exit %d\n%s", code, out)
			}
			flockIn(t, 0, l)
			var script string
			switch over {
			case "empty-file":
				script = fmt.Sprintf(": > %[1]s/locks && mount --bind %[1]s/locks /proc/locks", dir)
			case "child-procfs":
				cproc := filepath.Join(dir, "cproc")
				testutil.Mkdir(t, cproc)
				// The child namespace's init mounts its procfs in this
				// mount namespace, and stays (its locks are listed only
				// while it lives; the file is what matters).
				script = fmt.Sprintf("{ unshare --pid --fork --kill-child sh -c 'mount -t proc proc %[1]s && exec sleep 600' & } && for i in $(seq 100); do test -e %[1]s/locks && break; sleep 0.1; done && mount --bind %[1]s/locks /proc/locks", cproc)
			}
			ns := mountNS(t, script)
			if out, _ := runAs(t, exec.Command("nsenter", "-t", strconv.Itoa(ns), "-m", "cat", "/proc/locks")); strings.Contains(string(out), "FLOCK") {
				t.Fatalf("the file over /proc/locks lists the host's flock:\n%s", out)
			}
			before := testutil.Snapshot(t, reg)
			if g := doctorIn(t, ns, bin, reg)[l]; g.Verdict != "unknown" {
				t.Errorf("doctor with %s over /proc/locks: %s (%s), want unknown", over, g.Verdict, g.Reason)
			}
			if g := doctorIn(t, ns, bin, "--fix", reg)[l]; g.Verdict != "live" || g.Action == "removed" {
				t.Errorf("doctor --fix with %s over /proc/locks: %s, %s (%s); want live, kept", over, g.Verdict, g.Action, g.Reason)
			}
			out, code := runAs(t, exec.Command("nsenter", "-t", strconv.Itoa(ns), "-m", bin, "acquire", "--timeout", "1s", l))
			if code != 75 {
				t.Errorf("acquire with %s over /proc/locks of a lock a host process flocks: exit %d, want 75\n%s", over, code, out)
			}
			testutil.Untouched(t, reg, before)
		})
	}
}

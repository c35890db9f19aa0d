//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// A lock is judged by its own file system, not only its directory's: a
// file or directory bound over the lock's name, or over its record, from a
// FUSE (or network) file system is another machine's to write, whatever
// the directory holding it is on (issue 28, review F4).

// bindfsMount mounts a bindfs (FUSE) view of a new directory and returns
// the directory and its FUSE view. It skips when bindfs is missing (.ci/run
// installs it) or cannot mount. Only in a test's own mount namespace
// (inMountNS); its daemon runs in the foreground as the init of a pid
// namespace of its own, tied to this process, so it ends with the test
// however the test ends, and never keeps the namespace alive.
func bindfsMount(t *testing.T) (src, view string) {
	t.Helper()
	mustBeInMountNS(t)
	if _, err := exec.LookPath("bindfs"); err != nil {
		t.Skip("bindfs is not installed (Debian package bindfs): no FUSE file system to bind from")
	}
	src, view = t.TempDir(), t.TempDir()
	var out bytes.Buffer
	d := tiedInPidNS(t, &out, "bindfs", "-f", src, view)
	mounted := func() bool { return strings.HasPrefix(mountType(t, view), "fuse") }
	deadline := time.Now().Add(10 * time.Second)
	for !mounted() {
		if d.ProcessState != nil || time.Now().After(deadline) {
			t.Skipf("bindfs cannot mount here (within 10s): %s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(view, unix.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", view, err)
		}
	})
	return src, view
}

// bindOver bind-mounts from over to (which must exist), until the test
// ends; only in a test's own mount namespace (inMountNS).
func bindOver(t *testing.T, from, to string) {
	t.Helper()
	mustBeInMountNS(t)
	if err := unix.Mount(from, to, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s over %s: %v", from, to, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(to, unix.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", to, err)
		}
	})
}

// goneHere is the pid of a process that has exited.
func goneHere(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestLockOnItsOwnMount: a pid file, a lock directory, a record inside a
// lock directory and a generation A holder beside one, each bound from a
// FUSE file system into a directory on a local one, read remote, and the
// bare pid foreign; on the code that took the directory's file system they
// read local, and the bare pid of a process absent here gone.
func TestLockOnItsOwnMount(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	_, view := bindfsMount(t)
	if typ := mountType(t, os.TempDir()); typ != "ext4" && typ != "ext2" && typ != "ext3" && typ != "tmpfs" && typ != "xfs" && typ != "btrfs" {
		t.Skipf("the temporary directory is on %q, not a local file system lockctl names", typ)
	}
	pid := goneHere(t)
	host := kernel.LocalHost()
	local := t.TempDir()

	// A pid file bound over app.lock.
	write(t, filepath.Join(view, "remote.lock"), fmt.Sprintf("%d\n", pid))
	write(t, filepath.Join(local, "app.lock"), "")
	bindOver(t, filepath.Join(view, "remote.lock"), filepath.Join(local, "app.lock"))
	// A lock directory bound over d.lock.
	mkdir(t, filepath.Join(view, "dir"))
	write(t, filepath.Join(view, "dir", "holder"), "not read as anything\n")
	mkdir(t, filepath.Join(local, "d.lock"))
	bindOver(t, filepath.Join(view, "dir"), filepath.Join(local, "d.lock"))
	// A record bound over the holder inside a local lock directory.
	mkdir(t, filepath.Join(local, "r.lock"))
	write(t, filepath.Join(view, "record"), "not read as anything\n")
	write(t, filepath.Join(local, "r.lock", "holder"), "")
	bindOver(t, filepath.Join(view, "record"), filepath.Join(local, "r.lock", "holder"))
	// A generation A holder beside a local lock directory, naming this
	// host: on the FUSE file system it may be another machine's of that
	// name.
	mkdir(t, filepath.Join(local, "a.lock"))
	write(t, filepath.Join(view, "a.holder"), fmt.Sprintf("token %s.%d.1.%s\npid %d\ncommand sh\nhost %s\n", host.Name, pid, strings.Repeat("0", 32), pid, host.Name))
	write(t, filepath.Join(local, "a.lock.holder"), "")
	bindOver(t, filepath.Join(view, "a.holder"), filepath.Join(local, "a.lock.holder"))
	// A local lock beside them stays local.
	write(t, filepath.Join(local, "plain.lock"), fmt.Sprintf("%d\n", pid))

	for _, name := range []string{"app.lock", "d.lock", "r.lock", "a.lock"} {
		l, err := scan.ReadOne(local, name)
		if err != nil || l == nil {
			t.Fatalf("ReadOne(%s) = %v, %v", name, l, err)
		}
		if !l.FS.Remote || !strings.HasPrefix(l.FS.Name, "fuse") {
			t.Errorf("scan: %s (%s) has FS %+v, want its own file system's, fuse, remote", name, l.Kind, l.FS)
		}
		if l.FS.NameMax != 255 {
			t.Errorf("scan: %s has NameMax %d, want the directory's, 255", name, l.FS.NameMax)
		}
	}
	j := verdict.Judge{Host: host, Probe: kernel.KernelProbe{}, Evidence: &kernel.KernelEvidence{}}
	l, err := scan.ReadOne(local, "app.lock")
	if err != nil || l == nil {
		t.Fatalf("ReadOne(app.lock) = %v, %v", l, err)
	}
	if r := j.Judge(l); r.Verdict != verdict.Foreign || !strings.Contains(r.Reason, "bare pid on a network file system (fuse") {
		t.Errorf("Judge(app.lock, a FUSE file bound into a local directory) = %s (%s), want foreign: a bare pid on a network file system", r.Verdict, r.Reason)
	}
	if l, err = scan.ReadOne(local, "a.lock"); err != nil || l == nil {
		t.Fatalf("ReadOne(a.lock) = %v, %v", l, err)
	}
	if r := j.Judge(l); r.Verdict != verdict.Foreign {
		t.Errorf("Judge(a.lock, its holder a FUSE file) = %s (%s), want foreign", r.Verdict, r.Reason)
	}
	if l, err = scan.ReadOne(local, "plain.lock"); err != nil || l == nil {
		t.Fatalf("ReadOne(plain.lock) = %v, %v", l, err)
	}
	if l.FS.Remote {
		t.Errorf("scan: plain.lock, on the local directory's own mount, has FS %+v, want local", l.FS)
	}
}

// TestLockOnItsOwnLocalMount: a tmpfs mounted over a lock directory in a
// directory of another file system names the lock's file system, tmpfs,
// not the directory's; and a walk finds it so too. Needs no FUSE.
func TestLockOnItsOwnLocalMount(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	local := t.TempDir()
	if mountType(t, local) == "tmpfs" {
		t.Skip("the temporary directory is itself on tmpfs: the two would not differ")
	}
	tm := mountHere(t, "tmpfs", "size=1m")
	mkdir(t, filepath.Join(local, "t.lock"))
	bindOver(t, tm, filepath.Join(local, "t.lock"))
	write(t, filepath.Join(tm, "holder"), "")
	l, err := scan.ReadOne(local, "t.lock")
	if err != nil || l == nil {
		t.Fatalf("ReadOne(t.lock) = %v, %v", l, err)
	}
	dir := fsOf(t, local)
	if l.FS.Name != "tmpfs" || l.FS.Remote || l.FS.NameMax != dir.NameMax {
		t.Errorf("scan: t.lock, a tmpfs mounted over a lock directory on %s, has FS %+v, want {Name:tmpfs Remote:false NameMax:%d}", dir.Name, l.FS, dir.NameMax)
	}
	m, err := scan.NewMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := scan.ResolveRoot(local, m)
	if err != nil {
		t.Fatal(err)
	}
	var found []*scan.Lock
	w := scan.Walker{Match: m, Found: func(l *scan.Lock) { found = append(found, l) }, Warn: func(err error) { t.Errorf("walking %s: %v", local, err) }}
	if err := w.Walk(root); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].FS.Name != "tmpfs" {
		t.Errorf("Walk(%s) found %d locks, the first with FS %+v, want t.lock on tmpfs", local, len(found), firstFS(found))
	}
}

func firstFS(ls []*scan.Lock) fsx.FS {
	if len(ls) == 0 {
		return fsx.FS{}
	}
	return ls[0].FS
}

// overlayOf mounts an overlay of lower (one layer) with its upper and work
// directories on the temporary directory's file system; only in a test's
// own mount namespace (inMountNS).
func overlayOf(t *testing.T, lower string) string {
	t.Helper()
	mustBeInMountNS(t)
	base := t.TempDir()
	up, work, merged := filepath.Join(base, "u"), filepath.Join(base, "w"), filepath.Join(base, "m")
	for _, d := range []string{up, work, merged} {
		mkdir(t, d)
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, up, work)
	if err := unix.Mount("overlay", merged, "overlay", 0, data); err != nil {
		t.Skipf("cannot mount an overlay (%s): %v", data, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", merged, err)
		}
	})
	return merged
}

// TestOverlayOnItsLayers: an overlay is as local as its layers. With its
// lower layer on tmpfs and its upper on the temporary directory's file
// system it is local; with its lower layer on FUSE it is remote, and a
// bare pid in it foreign (on the code that took f_type alone, "overlay"
// was local and the pid of a process absent here gone).
func TestOverlayOnItsLayers(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	tm := mountHere(t, "tmpfs", "size=1m")
	if got := fsOf(t, overlayOf(t, tm)); got.Name != "overlay" || got.Remote {
		t.Errorf("FSOf(overlay of tmpfs and %s) = %+v, want overlay, local", mountType(t, os.TempDir()), got)
	}

	src, view := bindfsMount(t)
	pid := goneHere(t)
	write(t, filepath.Join(src, "pid.lock"), fmt.Sprintf("%d\n", pid))
	merged := overlayOf(t, view)
	if got := fsOf(t, merged); got.Name != "overlay on fuse" || !got.Remote {
		t.Errorf("FSOf(overlay with a FUSE lower layer) = %+v, want {Name:overlay on fuse Remote:true}", got)
	}
	var l *scan.Lock
	var err error
	done := make(chan struct{})
	go func() { defer close(done); l, err = scan.ReadOne(merged, "pid.lock") }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("reading pid.lock on the overlay did not return within 20s")
	}
	if err != nil || l == nil {
		t.Fatalf("ReadOne(pid.lock) = %v, %v", l, err)
	}
	j := verdict.Judge{Host: kernel.LocalHost(), Probe: kernel.KernelProbe{}, Evidence: &kernel.KernelEvidence{}}
	if r := j.Judge(l); r.Verdict != verdict.Foreign || !strings.Contains(r.Reason, "bare pid on a network file system (overlay on fuse)") {
		t.Errorf("Judge(pid.lock on an overlay of FUSE) = %s (%s), want foreign: a bare pid on a network file system", r.Verdict, r.Reason)
	}
}

// TestOverlayOverItsOwnLowerLayer: an overlay mounted over its own lower
// directory hides that layer from every path: what it is on cannot be
// told, and it is remote, the cautious side.
func TestOverlayOverItsOwnLowerLayer(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	base := t.TempDir()
	lower, up, work := filepath.Join(base, "l"), filepath.Join(base, "u"), filepath.Join(base, "w")
	for _, d := range []string{lower, up, work} {
		mkdir(t, d)
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, up, work)
	mustBeInMountNS(t)
	if err := unix.Mount("overlay", lower, "overlay", 0, data); err != nil {
		t.Skipf("cannot mount an overlay (%s): %v", data, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(lower, unix.MNT_DETACH) })
	if got := fsOf(t, lower); !got.Remote || got.Name != "overlay on layers not found here" {
		t.Errorf("FSOf(overlay over its own lower layer) = %+v, want {Name:overlay on layers not found here Remote:true}", got)
	}
}

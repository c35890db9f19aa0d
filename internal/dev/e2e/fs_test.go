//go:build linux

package e2e

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// FSOf: which file system a registry directory is on, and whether it is a
// network (or user-space) one, where a pid may be another host's.

// mountType returns the file system type /proc/self/mountinfo gives for
// the mount that holds path (the longest mount point that is a prefix).
func mountType(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no mountinfo: %v", err)
	}
	defer f.Close()
	best, typ := "", ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint options [optional...] - type source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fs, pf := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fs) < 5 || len(pf) < 1 {
			continue
		}
		mp := strings.ReplaceAll(fs[4], `\040`, " ")
		if (path == mp || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, typ = mp, pf[0]
		}
	}
	return typ
}

func fsOf(t *testing.T, dir string) fsx.FS {
	t.Helper()
	d, err := fsx.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := d.FS()
	if err != nil {
		t.Fatalf("FSOf(%s): %v", dir, err)
	}
	return got
}

// TestFSOfLocal: the file systems this machine has at hand are named as
// mountinfo names them, and are local.
func TestFSOfLocal(t *testing.T) {
	dirs := []string{t.TempDir(), "/tmp", "/dev/shm", "/proc", "/"}
	for _, d := range dirs {
		d, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		want := mountType(t, d)
		switch want {
		case "ext2", "ext3":
			want = "ext4" // one magic number
		case "ext4", "tmpfs", "xfs", "btrfs", "overlay", "proc":
		default:
			t.Logf("%s is on %q, which lockctl does not name: not checked", d, want)
			continue
		}
		got := fsOf(t, d)
		if want == "overlay" && strings.HasPrefix(got.Name, "overlay on ") && got.Remote {
			// An overlay is local only where its layers are found here,
			// and local (TestOverlayOnItsLayers); a container's root
			// overlay, whose layers are the host's paths, is remote.
			t.Logf("%s is %+v: its layers are not all local here", d, got)
			continue
		}
		if got.Name != want || got.Remote {
			t.Errorf("FSOf(%s) = %+v, want {Name:%s Remote:false}", d, got, want)
		}
	}
}

// TestFSOfDevShm: /dev/shm is tmpfs, and local.
func TestFSOfDevShm(t *testing.T) {
	if mountType(t, "/dev/shm") != "tmpfs" {
		t.Skip("/dev/shm is not a tmpfs mount here")
	}
	if got := fsOf(t, "/dev/shm"); got != (fsx.FS{Name: "tmpfs", NameMax: 255}) {
		t.Errorf("FSOf(/dev/shm) = %+v, want tmpfs, local", got)
	}
}

// mountHere mounts a new fstype on a new directory, only in a test's own
// mount namespace (inMountNS).
func mountHere(t *testing.T, fstype, data string) string {
	t.Helper()
	mustBeInMountNS(t)
	dir := t.TempDir()
	if err := unix.Mount("lockctl-test", dir, fstype, unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		t.Skipf("cannot mount %s: %v", fstype, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", dir, err)
		}
	})
	return dir
}

// TestFSOfMountedTmpfs: a tmpfs mounted for the test is named, and a lock
// found there by scan carries it.
func TestFSOfMountedTmpfs(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	dir := mountHere(t, "tmpfs", "size=1m")
	if got := fsOf(t, dir); got != (fsx.FS{Name: "tmpfs", NameMax: 255}) {
		t.Errorf("FSOf(%s) = %+v, want tmpfs, local", dir, got)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := scan.ReadOne(dir, "x.lock")
	if err != nil || l == nil {
		t.Fatalf("ReadOne = %v, %v", l, err)
	}
	if l.FS != (fsx.FS{Name: "tmpfs", NameMax: 255}) {
		t.Errorf("scan: Lock.FS = %+v, want tmpfs, local", l.FS)
	}
}

// TestFSOfUnrecognised: docs/verdicts.md says "an unrecognised file
// system type is treated as remote". ramfs is one lockctl does not name.
func TestFSOfUnrecognised(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	// mqueue is a file system lockctl has no name for: an unrecognised
	// type may be shared with other hosts, so it must read as remote.
	dir := mountHere(t, "mqueue", "")
	got := fsOf(t, dir)
	if got.Name != "0x19800202" {
		t.Errorf("FSOf(mqueue) = %+v, want the magic number 0x19800202 as its name", got)
	}
	if !got.Remote {
		t.Errorf("FSOf(mqueue) = %+v: an unrecognised file system type must be treated as remote", got)
	}
}

// ramfs is local, and named.
func TestFSOfRamfs(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	dir := mountHere(t, "ramfs", "")
	if got := fsOf(t, dir); got.Name != "ramfs" || got.Remote {
		t.Errorf("FSOf(ramfs) = %+v, want ramfs, local", got)
	}
}

// TestFSOfFUSE mounts a FUSE file system served by this test binary re-run
// as a tiny server (TestFUSEServerProcess) that answers just enough to
// open and statfs its root: FSOf says fuse, remote.
func TestFSOfFUSE(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse: %v", err)
	}
	dir := t.TempDir()
	srv := exec.Command(os.Args[0], "-test.run=^TestFUSEServerProcess$", "-test.count=1")
	srv.Env = append(os.Environ(), "FSX_FUSE_SERVER="+dir)
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The server dies with this process (which runs in a mount namespace
	// of its own), and the mount with them.
	if err := testutil.StartTied(srv); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ready <- sc.Text()
		}
		close(ready)
		_ = srv.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		// Unmounting ends the connection: the server's read fails and it
		// exits. Kill it if it does not.
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = srv.Process.Kill()
			testutil.Await(t, testutil.KillWait, fmt.Sprintf("the FUSE server (pid %d) to be reaped after its SIGKILL", srv.Process.Pid), exited)
		}
	})
	select {
	case line := <-ready:
		if line == "skip" {
			t.Skip("the FUSE server could not mount")
		}
		if line != "ready" {
			t.Fatalf("the FUSE server said %q, want ready", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the FUSE server did not say ready within 10s")
	}
	if typ := mountType(t, dir); !strings.HasPrefix(typ, "fuse") {
		t.Fatalf("%s is mounted as %q, want fuse", dir, typ)
	}
	// Every call into the mount runs with a deadline: a server that does
	// not answer must fail the test, not hang it.
	within := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = srv.Process.Kill() // a dead server fails the hung call
			t.Fatalf("%s on the FUSE mount did not return within 10s", what)
		}
	}
	var got fsx.FS
	var err2 error
	within("open and statfs", func() {
		d, err := fsx.OpenRoot(dir)
		if err != nil {
			err2 = err
			return
		}
		defer d.Close()
		got, err2 = d.FS()
	})
	if err2 != nil {
		t.Fatalf("FSOf(fuse): %v", err2)
	}
	if got != (fsx.FS{Name: "fuse", Remote: true, NameMax: got.NameMax}) {
		t.Errorf("FSOf(fuse) = %+v, want {Name:fuse Remote:true}", got)
	}

	// A bare pid file found there by scan carries the file system, and
	// reads foreign: the pid may be another host's.
	var pidLock, emptyLock *scan.Lock
	within("scan", func() {
		pidLock, err2 = scan.ReadOne(dir, "pid.lock")
		if err2 == nil {
			emptyLock, err2 = scan.ReadOne(dir, "empty.lock")
		}
	})
	if err2 != nil || pidLock == nil || emptyLock == nil {
		t.Fatalf("ReadOne on the FUSE mount = %v, %v, %v", pidLock, emptyLock, err2)
	}
	if pidLock.FS != (fsx.FS{Name: "fuse", Remote: true, NameMax: pidLock.FS.NameMax}) || pidLock.Format != scan.FormatPid {
		t.Fatalf("scan: pid.lock = %s with FS %+v, want a pid file on fuse, remote", pidLock.Format, pidLock.FS)
	}
	host := kernel.LocalHost()
	j := verdict.Judge{Host: host, Probe: kernel.KernelProbe{}, Evidence: &kernel.KernelEvidence{}}
	var r, e verdict.Result
	within("judge", func() { r, e = j.Judge(pidLock), j.Judge(emptyLock) })
	if r.Verdict != verdict.Foreign || !strings.Contains(r.Reason, "bare pid on a network file system (fuse)") {
		t.Errorf("Judge(pid.lock on fuse) = %s (%s), want foreign: a bare pid on a network file system", r.Verdict, r.Reason)
	}
	// An old, unheld owner-less lock there is not swept, even with
	// --legacy-older-than.
	if e.Verdict != verdict.Ownerless {
		t.Fatalf("Judge(empty.lock on fuse) = %s (%s), want ownerless", e.Verdict, e.Reason)
	}
	fx := fix.New(judges.Sweep(host))
	fx.LegacyOlderThan = time.Hour
	var o fix.Outcome
	within("fix", func() { o = fx.Fix(e) })
	if o.Action != fix.Kept || !strings.Contains(o.Reason, "on a network file system (fuse)") {
		t.Errorf("Fix(empty.lock on fuse) = %s (%s), want kept: a network file system", o.Action, o.Reason)
	}
}

// The FUSE protocol, as much as this needs (include/uapi/linux/fuse.h).
const (
	fuseLookup      = 1
	fuseForget      = 2
	fuseGetattr     = 3
	fuseOpen        = 14
	fuseRead        = 15
	fuseStatfs      = 17
	fuseRelease     = 18
	fuseFlush       = 25
	fuseInit        = 26
	fuseOpendir     = 27
	fuseReaddir     = 28
	fuseReleasedir  = 29
	fuseInterrupt   = 36
	fuseDestroy     = 38
	fuseBatchForget = 42
	fuseInHeader    = 40
)

// TestFUSEServerProcess is not a test: it is the FUSE server TestFSOfFUSE
// starts. It mounts an empty directory at $FSX_FUSE_SERVER and serves it
// until it is unmounted.
func TestFUSEServerProcess(t *testing.T) {
	dir := os.Getenv("FSX_FUSE_SERVER")
	if dir == "" {
		t.Skip("not a test: the FUSE server TestFSOfFUSE starts")
	}
	os.Exit(fuseServe(dir))
}

// fuseFiles are the files the FUSE server serves in its root, by node id
// (the root is 1): a bare pid file and an empty lock file, both written
// three hours ago.
var fuseFiles = []struct {
	name string
	data string
}{{"pid.lock", "4242\n"}, {"empty.lock", ""}}

func fuseServe(dir string) int {
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println("skip")
		return 0
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fd)
	if err := unix.Mount("lockctl-test", dir, "fuse.lockctl-test", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		fmt.Fprintf(os.Stderr, "fuse mount: %v\n", err)
		fmt.Println("skip")
		return 0
	}
	fmt.Println("ready")
	le := binary.LittleEndian
	old := uint64(time.Now().Add(-3 * time.Hour).Unix())
	// attr fills a struct fuse_attr (88 bytes) for node id.
	attr := func(b []byte, id uint64) {
		le.PutUint64(b[0:], id) // ino
		mode, nlink, size := uint32(0o40755), uint32(2), uint64(0)
		if id >= 2 {
			mode, nlink, size = 0o100644, 1, uint64(len(fuseFiles[id-2].data))
		}
		le.PutUint64(b[8:], size)
		for _, off := range []int{24, 32, 40} { // atime, mtime, ctime
			le.PutUint64(b[off:], old)
		}
		le.PutUint32(b[60:], mode)
		le.PutUint32(b[64:], nlink)
		le.PutUint32(b[80:], 4096) // blksize
	}
	buf := make([]byte, 1<<20+4096)
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN), errors.Is(err, unix.ENOENT):
			continue
		case errors.Is(err, unix.ENODEV): // unmounted
			return 0
		case err != nil:
			fmt.Fprintf(os.Stderr, "fuse read: %v\n", err)
			return 1
		case n < fuseInHeader:
			continue
		}
		op, unique, node := le.Uint32(buf[4:]), le.Uint64(buf[8:]), le.Uint64(buf[16:])
		in := buf[fuseInHeader:n]
		reply := func(errno int32, body []byte) {
			out := make([]byte, 16+len(body))
			le.PutUint32(out[0:], uint32(len(out)))
			le.PutUint32(out[4:], uint32(errno))
			le.PutUint64(out[8:], unique)
			copy(out[16:], body)
			if _, err := unix.Write(fd, out); err != nil && !errors.Is(err, unix.ENOENT) {
				fmt.Fprintf(os.Stderr, "fuse write (op %d): %v\n", op, err)
			}
		}
		switch op {
		case fuseInit:
			body := make([]byte, 64)
			le.PutUint32(body[0:], 7)  // major
			le.PutUint32(body[4:], 31) // minor
			if len(in) >= 12 {
				copy(body[8:12], in[8:12]) // max_readahead
			}
			le.PutUint16(body[16:], 16)    // max_background
			le.PutUint16(body[18:], 12)    // congestion_threshold
			le.PutUint32(body[20:], 65536) // max_write
			le.PutUint32(body[24:], 1)     // time_gran
			reply(0, body)
		case fuseLookup:
			name := strings.TrimRight(string(in), "\x00")
			found := false
			for i, f := range fuseFiles {
				if node == 1 && f.name == name {
					body := make([]byte, 128) // fuse_entry_out
					le.PutUint64(body[0:], uint64(i+2))
					attr(body[40:], uint64(i+2))
					reply(0, body)
					found = true
				}
			}
			if !found {
				reply(-int32(unix.ENOENT), nil)
			}
		case fuseGetattr:
			body := make([]byte, 104) // fuse_attr_out
			attr(body[16:], node)
			reply(0, body)
		case fuseOpendir, fuseOpen:
			reply(0, make([]byte, 16))
		case fuseReaddir:
			// One entry per file; the offset in is the index to start at.
			start := le.Uint64(in[8:])
			var body []byte
			for i := int(start); i < len(fuseFiles); i++ {
				name := fuseFiles[i].name
				e := make([]byte, (24+len(name)+7)&^7)
				le.PutUint64(e[0:], uint64(i+2))
				le.PutUint64(e[8:], uint64(i+1)) // offset of the next entry
				le.PutUint32(e[16:], uint32(len(name)))
				le.PutUint32(e[20:], unix.DT_REG)
				copy(e[24:], name)
				body = append(body, e...)
			}
			reply(0, body)
		case fuseRead:
			off, size := le.Uint64(in[8:]), le.Uint32(in[16:])
			var data string
			if node >= 2 {
				data = fuseFiles[node-2].data
			}
			if off > uint64(len(data)) {
				off = uint64(len(data))
			}
			data = data[off:]
			if uint32(len(data)) > size {
				data = data[:size]
			}
			reply(0, []byte(data))
		case fuseReleasedir, fuseRelease, fuseFlush:
			reply(0, nil)
		case fuseStatfs:
			body := make([]byte, 80)
			le.PutUint32(body[40:], 4096) // bsize
			le.PutUint32(body[44:], 255)  // namelen
			le.PutUint32(body[48:], 4096) // frsize
			reply(0, body)
		case fuseForget, fuseBatchForget, fuseInterrupt:
			// no reply
		case fuseDestroy:
			reply(0, nil)
			return 0
		default:
			reply(-int32(unix.ENOSYS), nil)
		}
	}
}

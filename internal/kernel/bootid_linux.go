//go:build linux

package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// bootIDPath is where the kernel says which boot this is.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// bootIDInProc is that file's path inside procfs: what the root of the
// mount it is read through, plus the path below that mount's mount point,
// must be for the file read to be the kernel's.
const bootIDInProc = "/sys/kernel/random/boot_id"

// readBootID reads the boot id at p (bootIDPath but in tests) and says, in
// trust, why what it read is not the kernel's word, or nil when it is. Any
// file can be bind-mounted over the path (some sandboxes give each
// container a boot id of its own so), and a process that reads it there
// writes that id into its records: a reader that compares it with its own
// would take a live holder for one of another boot. So the id is trusted
// only if the file opened is on procfs (fstatfs) and its mount (by the
// descriptor's mount id: statx, or mnt_id in /proc/self/fdinfo) is, by
// /proc/self/mountinfo, a procfs mount whose root plus the path below its
// mount point is the kernel's boot_id: not a plain file bound over it, nor
// another proc file (random/uuid), nor anything bound over the directories
// above it. id is "" when nothing could be read.
func readBootID(p string) (id string, trust error) {
	fd, err := retryFd(func() (int, error) {
		return unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	})
	if err != nil {
		return "", fmt.Errorf("cannot open %s: %w", p, err)
	}
	defer unix.Close(fd)
	var b [128]byte
	n, err := retryFd(func() (int, error) { return unix.Read(fd, b[:]) })
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", p, err)
	}
	line, _, _ := bytes.Cut(b[:n], []byte("\n"))
	id = strings.TrimSpace(string(line))
	return id, bootIDTrust(fd, p)
}

// bootIDTrust is readBootID's check of the descriptor fd, opened at p.
func bootIDTrust(fd int, p string) error {
	_, err := procFileTrust(fd, p, bootIDInProc, "the kernel's boot id", nil)
	return err
}

// procFileTrust checks that the descriptor fd, opened at p, is procfs's
// file inProc (its path inside procfs) and not something mounted over p or
// over a directory above it: the file is on procfs (fstatfs), and its mount
// (by the descriptor's mount id) is, by /proc/self/mountinfo, a procfs
// mount whose root plus the path below its mount point is inProc. what
// names the file for the error; the mount found is returned. mountinfo is
// /proc/self/mountinfo where the caller has read it already, nil to read it
// here.
func procFileTrust(fd int, p, inProc, what string, mountinfo []byte) (mountEntry, error) {
	var sfs unix.Statfs_t
	if err := retry(func() error { return unix.Fstatfs(fd, &sfs) }); err != nil {
		return mountEntry{}, fmt.Errorf("cannot tell which file system %s is on (%v)", p, err)
	}
	if sfs.Type != unix.PROC_SUPER_MAGIC {
		return mountEntry{}, fmt.Errorf("%s is not on procfs (file system type %#x): something is mounted over it, so it is not %s", p, sfs.Type, what)
	}
	id, err := fdMountID(fd)
	if err != nil {
		return mountEntry{}, fmt.Errorf("cannot tell which mount %s was read through (%v), so whether it is %s cannot be told", p, err, what)
	}
	b := mountinfo
	if b == nil {
		if b, err = readFile("/proc/self/mountinfo"); err != nil {
			return mountEntry{}, fmt.Errorf("cannot read /proc/self/mountinfo (%v), so whether %s is %s cannot be told", errors.Unwrap(err), p, what)
		}
	}
	m, ok := mountByID(string(b), id)
	if !ok {
		return mountEntry{}, fmt.Errorf("the mount %s was read through (id %d) is not in /proc/self/mountinfo, so whether it is %s cannot be told", p, id, what)
	}
	if m.fstype != "proc" {
		return m, fmt.Errorf("%s is read through a %s mount on %s, not procfs: it is not %s", p, m.fstype, m.point, what)
	}
	var below string
	switch {
	case m.point == "/":
		below = p
	case p == m.point:
		below = "/"
	case strings.HasPrefix(p, m.point+"/"):
		below = p[len(m.point):]
	default:
		return m, fmt.Errorf("%s was read through the procfs mount on %s, which is not above it, so whether it is %s cannot be told", p, m.point, what)
	}
	if got := path.Join(m.root, below); got != inProc {
		return m, fmt.Errorf("%s is procfs's %s, mounted over it on %s: not %s", p, got, m.point, what)
	}
	return m, nil
}

// fdMountID is the mount id of the file open at fd: statx's, or where the
// kernel has no STATX_MNT_ID (before 5.8), /proc/self/fdinfo's mnt_id.
func fdMountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	err := retry(func() error {
		return unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &stx)
	})
	if err == nil && stx.Mask&unix.STATX_MNT_ID != 0 {
		return stx.Mnt_id, nil
	}
	return fdinfoMountID(fd)
}

// fdinfoMountID is the mnt_id line of /proc/self/fdinfo/<fd>.
func fdinfoMountID(fd int) (uint64, error) {
	p := "/proc/self/fdinfo/" + strconv.Itoa(fd)
	b, err := readFile(p)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "mnt_id:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, &fs.PathError{Op: "read", Path: p, Err: errors.New("no mnt_id")}
}

// mountEntry is one line of a mountinfo: the root of the mount within its
// file system, where it is mounted, the file system's type, and the device
// of its superblock (the third field, which /proc/locks names files by).
type mountEntry struct {
	root, point, fstype string
	dev                 uint64
}

// mountByID finds the mount whose id is id in mountinfo.
func mountByID(mountinfo string, id uint64) (mountEntry, bool) {
	for line := range strings.SplitSeq(mountinfo, "\n") {
		if n, m, ok := parseMount(line); ok && n == id {
			return m, true
		}
	}
	return mountEntry{}, false
}

// mountsByID indexes every mount of mountinfo by its id, for a caller that
// asks about many (the lock table's cover, once per gone lock).
func mountsByID(mountinfo string) map[uint64]mountEntry {
	ms := map[uint64]mountEntry{}
	for line := range strings.SplitSeq(mountinfo, "\n") {
		if n, m, ok := parseMount(line); ok {
			ms[n] = m
		}
	}
	return ms
}

// parseMount reads one line of a mountinfo: its mount id and entry.
func parseMount(line string) (uint64, mountEntry, bool) {
	pre, post, ok := strings.Cut(line, " - ")
	f := strings.Fields(pre)
	g := strings.Fields(post)
	if !ok || len(f) < 5 || len(g) < 1 {
		return 0, mountEntry{}, false
	}
	n, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, mountEntry{}, false
	}
	m := mountEntry{root: unescapeMount(f[3]), point: unescapeMount(f[4]), fstype: g[0]}
	if maj, min, ok := strings.Cut(f[2], ":"); ok {
		a, err1 := strconv.ParseUint(maj, 10, 32)
		b, err2 := strconv.ParseUint(min, 10, 32)
		if err1 == nil && err2 == nil {
			m.dev = unix.Mkdev(uint32(a), uint32(b))
		}
	}
	return n, m, true
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, \011,
// \012, \134).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// bootIDIn reads the boot id under the root of process pid, as that
// process reads it (proc/sys/kernel/random/boot_id resolved inside its
// root and through its mount namespace, never through a magic link,
// without blocking, at most 64 bytes of a regular file): a file mounted
// over the kernel's there is what a writer there hashes into its scope.
// boots remembers the id under each root already read. A root with no
// such file (a jail without /proc) gives fs.ErrNotExist: a writer there
// reads no boot id, and writes no scope.
func bootIDIn(pid string, boots map[rootKey]string) (string, error) {
	return firstLineIn(pid, strings.TrimPrefix(bootIDPath, "/"), boots)
}

//go:build linux

package fsx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// statxMask asks for the mount id too: the kernel has it at hand, and the
// lock table's coverage of a file is its mount's (kernel.Cover).
const statxMask = unix.STATX_BASIC_STATS | unix.STATX_BTIME | unix.STATX_MNT_ID

func fromStatx(x *unix.Statx_t) Stat {
	s := Stat{
		Dev:   unix.Mkdev(x.Dev_major, x.Dev_minor),
		Ino:   x.Ino,
		Mode:  modeOf(uint32(x.Mode)),
		Nlink: uint64(x.Nlink),
		Uid:   x.Uid,
		Size:  int64(x.Size),
		Mtime: time.Unix(x.Mtime.Sec, int64(x.Mtime.Nsec)),
		Ctime: time.Unix(x.Ctime.Sec, int64(x.Ctime.Nsec)),
	}
	if x.Mask&unix.STATX_BTIME != 0 && x.Btime.Sec != 0 {
		s.Btime = time.Unix(x.Btime.Sec, int64(x.Btime.Nsec))
	}
	if x.Mask&unix.STATX_MNT_ID != 0 {
		s.Mount, s.HasMount = x.Mnt_id, true
	}
	s.MountRoot = x.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && x.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	return s
}

func lstatat(dirfd int, dir, name string) (Stat, error) {
	var x unix.Statx_t
	err := retry(func() error {
		return unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, statxMask, &x)
	})
	if err != nil {
		return Stat{}, pathErr("stat", dir, name, err)
	}
	return fromStatx(&x), nil
}

func fstat(fd int, path string) (Stat, error) {
	var x unix.Statx_t
	err := retry(func() error {
		return unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, statxMask, &x)
	})
	if err != nil {
		return Stat{}, pathErr("stat", path, "", err)
	}
	return fromStatx(&x), nil
}

func readDirFunc(fd int, dir string, rewind bool, f func(name string, typ fs.FileMode)) error {
	return readDirents(fd, dir, rewind, unix.Getdents, func(buf []byte) { eachDirent(buf, f) })
}

// eachDirent decodes struct linux_dirent64 records (ino u64, off s64,
// reclen u16, type u8, then a NUL-terminated name), lending each name to f.
func eachDirent(b []byte, f func(string, fs.FileMode)) {
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			return
		}
		typ := b[18]
		name := b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[reclen:]
		if len(name) == 0 || len(name) <= 2 && name[0] == '.' && (len(name) == 1 || name[1] == '.') {
			continue
		}
		f(unsafe.String(&name[0], len(name)), direntType(typ))
	}
}

// parseDirents decodes struct linux_dirent64 records (ino u64, off s64,
// reclen u16, type u8, then a NUL-terminated name) into entries.
func parseDirents(b []byte, out []Entry) []Entry {
	eachDirent(b, func(name string, typ fs.FileMode) {
		out = append(out, Entry{Name: strings.Clone(name), Type: typ})
	})
	return out
}

func direntType(t uint8) fs.FileMode {
	switch t {
	case unix.DT_REG:
		return 0
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

func renameNoReplace(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	err := retry(func() error {
		return unix.Renameat2(olddirfd, old, newdirfd, new, unix.RENAME_NOREPLACE)
	})
	if err == unix.EINVAL || err == unix.ENOSYS {
		return pathErr("rename", olddir, old, ErrNoReplaceUnsupported)
	}
	if err != nil {
		return pathErr("rename", olddir, old, err)
	}
	return nil
}

// File system magic numbers (statfs f_type) that lockctl names.
var fsTypes = map[uint32]FS{
	0xEF53:     {Name: "ext4"},
	0x01021994: {Name: "tmpfs"},
	0x58465342: {Name: "xfs"},
	0x9123683E: {Name: "btrfs"},
	0x2FC12FC1: {Name: "zfs"},
	0x794c7630: {Name: "overlay"},
	0x9fa0:     {Name: "proc"},
	0x858458f6: {Name: "ramfs"},
	0xF2F52010: {Name: "f2fs"},
	0x73717368: {Name: "squashfs"},
	0xE0F5E1E2: {Name: "erofs"},
	0x4d44:     {Name: "vfat"},
	0x2011BAB0: {Name: "exfat"},
	0x5346544e: {Name: "ntfs"},
	0x7366746e: {Name: "ntfs3"},
	0x3153464a: {Name: "jfs"},
	0x52654973: {Name: "reiserfs"},
	0x482b:     {Name: "hfsplus"},
	0xca451a4e: {Name: "bcachefs"},
	0x3434:     {Name: "nilfs"},
	0x9660:     {Name: "iso9660"},
	0x15013346: {Name: "udf"},
	0xf15f:     {Name: "ecryptfs"},
	0x28cd3d45: {Name: "cramfs"},
	0x62656572: {Name: "sysfs"},
	0x63677270: {Name: "cgroup2"},
	0x6969:     {Name: "nfs", Remote: true},
	0x517B:     {Name: "smb", Remote: true},
	0xFF534D42: {Name: "cifs", Remote: true},
	0xFE534D42: {Name: "smb2", Remote: true},
	0x65735546: {Name: "fuse", Remote: true},
	0x00C36400: {Name: "ceph", Remote: true},
	0x5346414F: {Name: "afs", Remote: true},
	0x6B414653: {Name: "afs", Remote: true},
	0x01021997: {Name: "9p", Remote: true},
	0x0BD00BD0: {Name: "lustre", Remote: true},
	0x01161970: {Name: "gfs2", Remote: true},
	0x7461636f: {Name: "ocfs2", Remote: true},
	0x47504653: {Name: "gpfs", Remote: true},
	0x73757245: {Name: "coda", Remote: true},
	0x564c:     {Name: "ncp", Remote: true},
}

func fsAt(dirfd int, dir, name string) (FS, error) {
	// O_PATH opens any kind of file without reading it, and with
	// O_NOFOLLOW a symbolic link itself; fstatfs answers on such a
	// descriptor.
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return FS{}, pathErr("open", dir, name, err)
	}
	defer closeFd(fd)
	return fsOf(fd, filepath.Join(dir, name))
}

func fsOf(fd int, path string) (FS, error) { return fsOfDepth(fd, path, 0) }

func fsOfDepth(fd int, path string, depth int) (FS, error) {
	var st unix.Statfs_t
	if err := retry(func() error { return unix.Fstatfs(fd, &st) }); err != nil {
		return FS{}, pathErr("statfs", path, "", err)
	}
	// f_type is signed on some architectures: the magic is its low 32 bits.
	t := uint32(st.Type)
	f, ok := fsTypes[t]
	if !ok {
		// A type lockctl does not know may be shared with other hosts: the
		// cautious side is remote.
		f = FS{Name: fmt.Sprintf("0x%x", t), Remote: true}
	}
	f.NameMax = int(st.Namelen)
	if stacked[t] {
		if below := layersLocal(fd, depth); below != "" {
			f.Name, f.Remote = f.Name+" on "+below, true
		}
	}
	return f, nil
}

// noOpenat2 is set once openat2(2) is found missing (Linux before 5.6) or
// refused (a seccomp filter): openDirWhole then stops trying it.
var noOpenat2 atomic.Bool

// openDirWhole opens the absolute directory path in one openat2(2) call
// that refuses a symbolic link anywhere in it (RESOLVE_NO_SYMLINKS), as the
// walk one component at a time does, and ".." too. ok is false when it did
// not open it, for any reason: the walk then opens it, or says which
// component it cannot, in the words it always has. A Lock's Acquire and
// Release open the lock's directory twice, and the walk was a fifth of
// their cost (issue 19).
func openDirWhole(path string) (fd int, ok bool) {
	if noOpenat2.Load() || strings.Contains(path, "/../") || strings.HasSuffix(path, "/..") {
		return -1, false
	}
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	err := retry(func() (err error) {
		fd, err = unix.Openat2(unix.AT_FDCWD, path, &how)
		return err
	})
	switch {
	case err == nil:
		return fd, true
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM), errors.Is(err, unix.E2BIG):
		noOpenat2.Store(true)
	}
	return -1, false
}

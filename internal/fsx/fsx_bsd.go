//go:build darwin || freebsd

package fsx

// The BSD implementation (macOS, FreeBSD): the same dirfd discipline as on
// Linux — openat with O_NOFOLLOW, fstatat with AT_SYMLINK_NOFOLLOW — but
// without statx, getdents or renameat2. RenameNoReplace is each platform's
// own (fsx_darwin.go, fsx_freebsd.go). See docs/platforms.md.

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

func fromStat(x *unix.Stat_t) Stat {
	s := Stat{
		Dev:   uint64(x.Dev),
		Ino:   uint64(x.Ino),
		Mode:  modeOf(uint32(x.Mode)),
		Nlink: uint64(x.Nlink),
		Uid:   x.Uid,
		Size:  x.Size,
		Mtime: time.Unix(x.Mtim.Unix()),
		Ctime: time.Unix(x.Ctim.Unix()),
	}
	if x.Btim.Sec > 0 {
		s.Btime = time.Unix(x.Btim.Unix())
	}
	return s
}

func lstatat(dirfd int, dir, name string) (Stat, error) {
	var x unix.Stat_t
	if err := retry(func() error { return unix.Fstatat(dirfd, name, &x, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return Stat{}, pathErr("stat", dir, name, err)
	}
	return fromStat(&x), nil
}

func fstat(fd int, path string) (Stat, error) {
	var x unix.Stat_t
	if err := retry(func() error { return unix.Fstat(fd, &x) }); err != nil {
		return Stat{}, pathErr("stat", path, "", err)
	}
	return fromStat(&x), nil
}

func readDirFunc(fd int, dir string, rewind bool, f func(name string, typ fs.FileMode)) error {
	var names []string
	return readDirents(fd, dir, rewind, unix.ReadDirent, func(buf []byte) {
		_, _, names = unix.ParseDirent(buf, -1, names[:0])
		for _, name := range names {
			typ := fs.ModeIrregular
			var x unix.Stat_t
			if retry(func() error { return unix.Fstatat(fd, name, &x, unix.AT_SYMLINK_NOFOLLOW) }) == nil {
				typ = modeOf(uint32(x.Mode)).Type()
			}
			f(name, typ)
		}
	})
}

// bsdTypes are the file system type names (statfs f_fstypename) lockctl
// knows to be local. Everything else, including nfs, smbfs, afpfs, webdav
// and the FUSE family, is taken as remote: the cautious side.
var bsdTypes = map[string]bool{
	"apfs": true, "hfs": true, "ufs": true, "zfs": true, "tmpfs": true,
	"devfs": true, "msdos": true, "msdosfs": true, "exfat": true, "cd9660": true,
	"udf": true, "ext2fs": true, "fdescfs": true, "procfs": true, "nullfs": true,
}

func fsOf(fd int, path string) (FS, error) {
	var st unix.Statfs_t
	if err := retry(func() error { return unix.Fstatfs(fd, &st) }); err != nil {
		return FS{}, pathErr("statfs", path, "", err)
	}
	name := unix.ByteSliceToString(st.Fstypename[:])
	if name == "" {
		name = fmt.Sprintf("statfs:%d", st.Type)
	}
	return FS{Name: name, Remote: !bsdTypes[name], NameMax: nameMax(&st)}, nil
}

// openDirWhole: no openat2(2) here; the walk opens every directory.
func openDirWhole(path string) (fd int, ok bool) { return -1, false }

func fsAt(dirfd int, dir, name string) (FS, error) {
	// No O_PATH here: a non-blocking read-only open (which a FIFO or a
	// device does not wait on) without following a link at name.
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return FS{}, pathErr("open", dir, name, err)
	}
	defer closeFd(fd)
	return fsOf(fd, filepath.Join(dir, name))
}

//go:build darwin || freebsd

package fsx

// The BSD implementation (macOS, FreeBSD): the same dirfd discipline as on
// Linux — openat with O_NOFOLLOW, fstatat with AT_SYMLINK_NOFOLLOW — but
// without statx, getdents or renameat2. RenameNoReplace is not yet built on
// the platform's own primitive (macOS renameatx_np(RENAME_EXCL)), so it
// refuses (ErrNoReplaceUnsupported) and --fix and Acquire's break rename
// nothing. See docs/platforms.md.

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

func retry(f func() error) error {
	for {
		err := f()
		if err != unix.EINTR {
			return err
		}
	}
}

// OpenRoot opens the directory at path, which the operator named, following
// symbolic links in path itself. The caller closes the descriptor.
func OpenRoot(path string) (int, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, pathErr("open", path, "", err)
	}
	return fd, nil
}

// OpenDirAt opens the directory name inside dirfd without following a
// symbolic link (ELOOP or ENOTDIR instead).
func OpenDirAt(dirfd int, dir, name string) (int, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, pathErr("open", dir, name, err)
	}
	return fd, nil
}

// Close closes fd.
func Close(fd int) { _ = unix.Close(fd) }

func fromStat(x *unix.Stat_t) Stat {
	s := Stat{
		Dev:   uint64(x.Dev),
		Ino:   uint64(x.Ino),
		Mode:  modeOf(uint32(x.Mode)),
		Nlink: uint64(x.Nlink),
		Uid:   x.Uid,
		Size:  x.Size,
		Mtime: time.Unix(x.Mtim.Unix()),
	}
	if x.Btim.Sec > 0 {
		s.Btime = time.Unix(x.Btim.Unix())
	}
	return s
}

func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// Lstatat describes the entry name inside dirfd without following it.
func Lstatat(dirfd int, dir, name string) (Stat, error) {
	var x unix.Stat_t
	if err := retry(func() error { return unix.Fstatat(dirfd, name, &x, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return Stat{}, pathErr("stat", dir, name, err)
	}
	return fromStat(&x), nil
}

// Fstat describes the open file fd. path is for messages only.
func Fstat(fd int, path string) (Stat, error) {
	var x unix.Stat_t
	if err := retry(func() error { return unix.Fstat(fd, &x) }); err != nil {
		return Stat{}, pathErr("stat", path, "", err)
	}
	return fromStat(&x), nil
}

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadDirFunc calls f for each entry of the directory open at fd, from its
// start, with its name and type. The type comes from fstatat without
// following links; an entry that cannot be stat'ed (removed meanwhile) is
// reported as fs.ModeIrregular, for the caller to look at again. The name
// is only lent: f must strings.Clone what it keeps.
func ReadDirFunc(fd int, dir string, f func(name string, typ fs.FileMode)) error {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return pathErr("readdir", dir, "", err)
	}
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var names []string
	for {
		var n int
		err := retry(func() (err error) {
			n, err = unix.ReadDirent(fd, buf)
			return err
		})
		if err != nil {
			return pathErr("readdir", dir, "", err)
		}
		if n <= 0 {
			return nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names[:0])
		for _, name := range names {
			typ := fs.ModeIrregular
			var x unix.Stat_t
			if retry(func() error { return unix.Fstatat(fd, name, &x, unix.AT_SYMLINK_NOFOLLOW) }) == nil {
				typ = modeOf(uint32(x.Mode)).Type()
			}
			f(name, typ)
		}
	}
}

// ReadFileAt reads at most max bytes of the regular file name inside dirfd,
// without following a symbolic link and without blocking (see the Linux
// implementation for the contract).
func ReadFileAt(dirfd int, dir, name string, max int) (data []byte, st Stat, truncated bool, err error) {
	var fd int
	err = retry(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, Stat{}, false, pathErr("open", dir, name, err)
	}
	defer unix.Close(fd)
	st, err = Fstat(fd, dir+"/"+name)
	if err != nil {
		return nil, Stat{}, false, err
	}
	if !st.Mode.IsRegular() {
		return nil, st, false, pathErr("read", dir, name, ErrNotRegular)
	}
	size := st.Size
	if size < 0 || size > int64(max) {
		size = int64(max)
	}
	buf := make([]byte, size+1)
	n := 0
	for n <= max {
		if n == len(buf) {
			buf = append(buf, make([]byte, min(len(buf), max+1-len(buf)))...)
		}
		var m int
		err = retry(func() (err error) {
			m, err = unix.Read(fd, buf[n:])
			return err
		})
		if err != nil {
			return nil, st, false, pathErr("read", dir, name, err)
		}
		if m == 0 {
			break
		}
		n += m
	}
	if n > max {
		return buf[:max], st, true, nil
	}
	return buf[:n], st, false, nil
}

// RenameNoReplace always refuses here, renaming nothing: the platform's
// no-replace rename is not wired in yet (issue 9).
func RenameNoReplace(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	return pathErr("rename", olddir, old, ErrNoReplaceUnsupported)
}

// Linkat makes new in newdirfd a hard link to old in olddirfd without
// following a symbolic link; it fails with EEXIST if new exists.
func Linkat(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	err := retry(func() error { return unix.Linkat(olddirfd, old, newdirfd, new, 0) })
	if err != nil {
		return pathErr("link", newdir, new, err)
	}
	return nil
}

// Unlinkat removes the file name inside dirfd (or, with dir true, the empty
// directory name). It never follows a symbolic link.
func Unlinkat(dirfd int, dirPath, name string, dir bool) error {
	flags := 0
	op := "remove"
	if dir {
		flags = unix.AT_REMOVEDIR
		op = "rmdir"
	}
	if err := retry(func() error { return unix.Unlinkat(dirfd, name, flags) }); err != nil {
		return pathErr(op, dirPath, name, err)
	}
	return nil
}

// OpenDirNoFollow opens the absolute directory path one component at a time
// from "/", refusing a symbolic link at every step.
func OpenDirNoFollow(path string) (int, error) {
	if !strings.HasPrefix(path, "/") {
		return -1, pathErr("open", path, "", unix.EINVAL)
	}
	fd, err := OpenRoot("/")
	if err != nil {
		return -1, err
	}
	cur := "/"
	for _, c := range strings.Split(path, "/") {
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			unix.Close(fd)
			return -1, pathErr("open", path, "", unix.EINVAL)
		}
		next, err := OpenDirAt(fd, cur, c)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd, cur = next, filepath.Join(cur, c)
	}
	return fd, nil
}

// MkdirAt makes the directory name inside dirfd.
func MkdirAt(dirfd int, dir, name string, mode uint32) error {
	if err := retry(func() error { return unix.Mkdirat(dirfd, name, mode) }); err != nil {
		return pathErr("mkdir", dir, name, err)
	}
	return nil
}

// CreateAt creates the file name inside dirfd, which must not exist yet,
// writes data to it and fsyncs it before closing. It returns its Stat.
func CreateAt(dirfd int, dir, name string, data []byte, mode uint32) (Stat, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		return err
	})
	if err != nil {
		return Stat{}, pathErr("create", dir, name, err)
	}
	defer unix.Close(fd)
	for b := data; len(b) > 0; {
		var n int
		err = retry(func() (err error) {
			n, err = unix.Write(fd, b)
			return err
		})
		if err != nil {
			return Stat{}, pathErr("write", dir, name, err)
		}
		b = b[n:]
	}
	if err := Fsync(fd, filepath.Join(dir, name)); err != nil {
		return Stat{}, err
	}
	return Fstat(fd, filepath.Join(dir, name))
}

// Fsync flushes fd (a file or a directory) to stable storage.
func Fsync(fd int, path string) error {
	if err := retry(func() error { return unix.Fsync(fd) }); err != nil {
		return pathErr("fsync", path, "", err)
	}
	return nil
}

// bsdTypes are the file system type names (statfs f_fstypename) lockctl
// knows to be local. Everything else, including nfs, smbfs, afpfs, webdav
// and the FUSE family, is taken as remote: the cautious side.
var bsdTypes = map[string]bool{
	"apfs": true, "hfs": true, "ufs": true, "zfs": true, "tmpfs": true,
	"devfs": true, "msdos": true, "msdosfs": true, "exfat": true, "cd9660": true,
	"udf": true, "ext2fs": true, "fdescfs": true, "procfs": true, "nullfs": true,
}

// FSOf reports the file system of the open directory fd.
func FSOf(fd int, path string) (FS, error) {
	var st unix.Statfs_t
	if err := retry(func() error { return unix.Fstatfs(fd, &st) }); err != nil {
		return FS{}, pathErr("statfs", path, "", err)
	}
	name := unix.ByteSliceToString(st.Fstypename[:])
	if name == "" {
		name = fmt.Sprintf("statfs:%d", st.Type)
	}
	return FS{Name: name, Remote: !bsdTypes[name]}, nil
}

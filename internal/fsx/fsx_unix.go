//go:build linux || darwin || freebsd

package fsx

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

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

func openRoot(path string) (int, error) {
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

func openDirAt(dirfd int, dir, name string) (int, error) {
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

func closeFd(fd int) { _ = unix.Close(fd) }

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

func linkat(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	err := retry(func() error { return unix.Linkat(olddirfd, old, newdirfd, new, 0) })
	if err != nil {
		return pathErr("link", newdir, new, err)
	}
	return nil
}

func unlinkat(dirfd int, dirPath, name string, dir bool) error {
	flags := 0
	op := "remove"
	if dir {
		flags = unix.AT_REMOVEDIR
		op = "rmdir"
	}
	err := retry(func() error { return unix.Unlinkat(dirfd, name, flags) })
	if err != nil {
		return pathErr(op, dirPath, name, err)
	}
	return nil
}

func openDirNoFollow(path string) (int, error) {
	if !strings.HasPrefix(path, "/") {
		return -1, pathErr("open", path, "", unix.EINVAL)
	}
	if fd, ok := openDirWhole(path); ok {
		return fd, nil
	}
	// One component at a time: where the kernel cannot refuse every
	// symbolic link of a path in one call, and to name the component
	// that fails when that call did.
	fd, err := openRoot("/")
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
		next, err := openDirAt(fd, cur, c)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd, cur = next, filepath.Join(cur, c)
	}
	return fd, nil
}

func mkdirAt(dirfd int, dir, name string, mode uint32) error {
	err := retry(func() error { return unix.Mkdirat(dirfd, name, mode) })
	if err != nil {
		return pathErr("mkdir", dir, name, err)
	}
	return nil
}

func createAt(dirfd int, dir, name string, data []byte, mode uint32) (Stat, error) {
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
	if err := retry(func() error { return unix.Fsync(fd) }); err != nil {
		return Stat{}, pathErr("fsync", dir, name, err)
	}
	return fstat(fd, filepath.Join(dir, name))
}

func fsync(fd int, path string) error {
	if err := retry(func() error { return unix.Fsync(fd) }); err != nil {
		return pathErr("fsync", path, "", err)
	}
	return nil
}

func readFileAtFd(dirfd int, dir, name string, max int) (data []byte, st Stat, truncated bool, err error) {
	var fd int
	err = retry(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, Stat{}, false, pathErr("open", dir, name, err)
	}
	defer unix.Close(fd)
	st, err = fstat(fd, "")
	if err != nil {
		// The path is named here, on failure only: every record of a
		// walk is read through this function.
		if pe, ok := err.(*fs.PathError); ok {
			pe.Path = dir + "/" + name
		}
		return nil, Stat{}, false, err
	}
	if !st.Mode.IsRegular() {
		return nil, st, false, pathErr("read", dir, name, ErrNotRegular)
	}
	// Size the buffer by the file, not by max: a report of many locks
	// keeps every record's bytes. The file may grow meanwhile, so the
	// buffer grows too, up to max+1 (one byte more says "too large").
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
		// All the bytes the Stat counted, and no more in a buffer with
		// room for one more: the end, without a read that returns 0 to
		// say so. Bytes written after this read could as well have been
		// written after that one, so nothing is read here that a reader
		// asking again could not have read (one read a record: the
		// common lock).
		if int64(n) == st.Size && n < len(buf) {
			break
		}
	}
	if n > max {
		return buf[:max], st, true, nil
	}
	return buf[:n], st, false, nil
}

// direntBufs recycles getdents buffers: a walk reads thousands of
// directories, and a fresh 32 KiB buffer for each is garbage to collect.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDirents reads the directory open at fd from its start, seeking back
// to it when rewind says the descriptor was read before, one buffer of
// records at a time (read is getdents or ReadDirent), handing each buffer
// to each.
func readDirents(fd int, dir string, rewind bool, read func(fd int, buf []byte) (int, error), each func(buf []byte)) error {
	if rewind {
		if _, err := unix.Seek(fd, 0, 0); err != nil {
			return pathErr("readdir", dir, "", err)
		}
	}
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	for {
		var n int
		err := retry(func() (err error) {
			n, err = read(fd, buf)
			return err
		})
		if err != nil {
			return pathErr("readdir", dir, "", err)
		}
		if n <= 0 {
			return nil
		}
		each(buf[:n])
	}
}

func openFileAt(dirfd int, dir, name string, flag int, mode uint32) (*os.File, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(dirfd, name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, mode)
		return err
	})
	if err != nil {
		return nil, pathErr("open", dir, name, err)
	}
	st, err := fstat(fd, filepath.Join(dir, name))
	if err == nil && !st.Mode.IsRegular() && !st.Mode.IsDir() {
		err = pathErr("open", dir, name, ErrNotRegular)
	}
	if err != nil {
		closeFd(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, name)), nil
}

func openDirFileAt(dirfd int, dir, name string) (*os.File, error) {
	fd, err := openDirAt(dirfd, dir, name)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, name)), nil
}

func readlinkAt(dirfd int, dir, name string, max int) (string, error) {
	buf := make([]byte, max+1)
	var n int
	err := retry(func() (err error) {
		n, err = unix.Readlinkat(dirfd, name, buf)
		return err
	})
	if err != nil {
		return "", pathErr("readlink", dir, name, err)
	}
	if n > max {
		return "", pathErr("readlink", dir, name, errTooLong)
	}
	return string(buf[:n]), nil
}

//go:build !linux && !darwin && !freebsd

package fsx

// The path-based fallback, for Windows and any platform without the *at
// system calls lockctl uses. A "descriptor" here is only a handle on a path
// kept in a table, so every operation re-resolves that path. The
// guarantees are therefore weaker than on Linux and the BSDs:
//
//   - Symbolic links (and Windows reparse points that Lstat reports as
//     links) are never followed below the root: each step is checked with
//     os.Lstat first. But a directory swapped for a link between that check
//     and the use can redirect the use (a time-of-check race the dirfd
//     implementations do not have).
//   - Types come from os.Lstat per entry; birth times are not recorded.
//   - RenameNoReplace always refuses (ErrNoReplaceUnsupported), so --fix
//     and Acquire's break rename nothing.
//
// See docs/platforms.md.

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

var handles = struct {
	sync.Mutex
	next  int
	paths map[int]string
}{next: 3, paths: map[int]string{}}

func register(path string) int {
	handles.Lock()
	defer handles.Unlock()
	fd := handles.next
	handles.next++
	handles.paths[fd] = path
	return fd
}

func pathOf(fd int) (string, error) {
	handles.Lock()
	defer handles.Unlock()
	p, ok := handles.paths[fd]
	if !ok {
		return "", syscall.EBADF
	}
	return p, nil
}

func fromInfo(fi fs.FileInfo) Stat {
	s := Stat{Mode: fi.Mode(), Size: fi.Size(), Mtime: fi.ModTime(), Nlink: 1}
	if dev, ino, ok := DevIno(fi); ok {
		s.Dev, s.Ino = dev, ino
	}
	return s
}

// lstatDir checks that p is a directory and not a symbolic link.
func lstatDir(p string) error {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return underlying(err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return syscall.ELOOP
	case !fi.IsDir():
		return syscall.ENOTDIR
	}
	return nil
}

func underlying(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

func openRoot(path string) (int, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return -1, pathErr("open", path, "", underlying(err))
	}
	if !fi.IsDir() {
		return -1, pathErr("open", path, "", syscall.ENOTDIR)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return -1, pathErr("open", path, "", err)
	}
	return register(abs), nil
}

func openDirAt(dirfd int, dir, name string) (int, error) {
	base, err := pathOf(dirfd)
	if err != nil {
		return -1, pathErr("open", dir, name, err)
	}
	p := filepath.Join(base, name)
	if err := lstatDir(p); err != nil {
		return -1, pathErr("open", dir, name, err)
	}
	return register(p), nil
}

func closeFd(fd int) {
	handles.Lock()
	delete(handles.paths, fd)
	handles.Unlock()
}

func lstatat(dirfd int, dir, name string) (Stat, error) {
	base, err := pathOf(dirfd)
	if err != nil {
		return Stat{}, pathErr("stat", dir, name, err)
	}
	fi, err := os.Lstat(filepath.Join(base, name))
	if err != nil {
		return Stat{}, pathErr("stat", dir, name, underlying(err))
	}
	return fromInfo(fi), nil
}

func fstat(fd int, path string) (Stat, error) {
	p, err := pathOf(fd)
	if err != nil {
		return Stat{}, pathErr("stat", path, "", err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return Stat{}, pathErr("stat", path, "", underlying(err))
	}
	return fromInfo(fi), nil
}

func readDirFunc(fd int, dir string, _ bool, f func(name string, typ fs.FileMode)) error {
	p, err := pathOf(fd)
	if err != nil {
		return pathErr("readdir", dir, "", err)
	}
	ents, err := os.ReadDir(p)
	for _, e := range ents {
		f(e.Name(), e.Type())
	}
	if err != nil {
		return pathErr("readdir", dir, "", underlying(err))
	}
	return nil
}

// readFileAtFd refuses anything Lstat does not call a regular file before
// opening it, and checks again on the opened file.
func readFileAtFd(dirfd int, dir, name string, max int) (data []byte, st Stat, truncated bool, err error) {
	base, err := pathOf(dirfd)
	if err != nil {
		return nil, Stat{}, false, pathErr("open", dir, name, err)
	}
	p := filepath.Join(base, name)
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, Stat{}, false, pathErr("open", dir, name, underlying(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// As open(O_NOFOLLOW) refuses it.
		return nil, Stat{}, false, pathErr("open", dir, name, syscall.ELOOP)
	}
	if !fi.Mode().IsRegular() {
		return nil, fromInfo(fi), false, pathErr("read", dir, name, ErrNotRegular)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, Stat{}, false, pathErr("open", dir, name, underlying(err))
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return nil, Stat{}, false, pathErr("stat", dir, name, underlying(err))
	}
	if !ofi.Mode().IsRegular() || !os.SameFile(fi, ofi) {
		return nil, fromInfo(ofi), false, pathErr("read", dir, name, ErrNotRegular)
	}
	st = fromInfo(ofi)
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, st, false, pathErr("read", dir, name, err)
	}
	if len(b) > max {
		return b[:max], st, true, nil
	}
	return b, st, false, nil
}

// renameNoReplace always refuses here, renaming nothing.
func renameNoReplace(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	return pathErr("rename", olddir, old, ErrNoReplaceUnsupported)
}

func join(fd int, name string) (string, error) {
	base, err := pathOf(fd)
	if err != nil {
		return "", err
	}
	return filepath.Join(base, name), nil
}

func linkat(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	op, err := join(olddirfd, old)
	if err != nil {
		return pathErr("link", newdir, new, err)
	}
	np, err := join(newdirfd, new)
	if err != nil {
		return pathErr("link", newdir, new, err)
	}
	if fi, err := os.Lstat(op); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return pathErr("link", newdir, new, syscall.ELOOP)
	}
	if err := os.Link(op, np); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return pathErr("link", newdir, new, syscall.EEXIST)
		}
		return pathErr("link", newdir, new, underlying(err))
	}
	return nil
}

func unlinkat(dirfd int, dirPath, name string, dir bool) error {
	op := "remove"
	if dir {
		op = "rmdir"
	}
	p, err := join(dirfd, name)
	if err != nil {
		return pathErr(op, dirPath, name, err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return pathErr(op, dirPath, name, underlying(err))
	}
	if dir != fi.IsDir() {
		if dir {
			return pathErr(op, dirPath, name, syscall.ENOTDIR)
		}
		return pathErr(op, dirPath, name, syscall.EISDIR)
	}
	if dir {
		// os.Remove removes only an empty directory; a non-empty one is
		// reported as ENOTEMPTY, as rmdir would.
		if ents, err := os.ReadDir(p); err == nil && len(ents) > 0 {
			return pathErr(op, dirPath, name, syscall.ENOTEMPTY)
		}
	}
	if err := os.Remove(p); err != nil {
		return pathErr(op, dirPath, name, underlying(err))
	}
	return nil
}

// openDirNoFollow checks each component with Lstat, one at a time.
func openDirNoFollow(path string) (int, error) {
	if !filepath.IsAbs(path) {
		return -1, pathErr("open", path, "", syscall.EINVAL)
	}
	clean := filepath.Clean(path)
	vol := filepath.VolumeName(clean)
	cur := vol + string(filepath.Separator)
	for _, c := range splitPath(clean[len(vol):]) {
		if c == ".." {
			return -1, pathErr("open", path, "", syscall.EINVAL)
		}
		cur = filepath.Join(cur, c)
		if err := lstatDir(cur); err != nil {
			return -1, pathErr("open", path, "", err)
		}
	}
	return register(cur), nil
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || os.IsPathSeparator(p[i]) {
			if c := p[start:i]; c != "" && c != "." {
				out = append(out, c)
			}
			start = i + 1
		}
	}
	return out
}

func mkdirAt(dirfd int, dir, name string, mode uint32) error {
	p, err := join(dirfd, name)
	if err == nil {
		err = os.Mkdir(p, fs.FileMode(mode))
	}
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			err = syscall.EEXIST
		}
		return pathErr("mkdir", dir, name, underlying(err))
	}
	return nil
}

func createAt(dirfd int, dir, name string, data []byte, mode uint32) (Stat, error) {
	p, err := join(dirfd, name)
	if err != nil {
		return Stat{}, pathErr("create", dir, name, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(mode))
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Stat{}, pathErr("create", dir, name, syscall.EEXIST)
		}
		return Stat{}, pathErr("create", dir, name, underlying(err))
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return Stat{}, pathErr("write", dir, name, underlying(err))
	}
	if err := f.Sync(); err != nil {
		return Stat{}, pathErr("fsync", dir, name, underlying(err))
	}
	fi, err := f.Stat()
	if err != nil {
		return Stat{}, pathErr("stat", dir, name, underlying(err))
	}
	return fromInfo(fi), nil
}

// fsync is a no-op for a directory here: the platform offers no portable
// way to flush one.
func fsync(fd int, path string) error {
	if _, err := pathOf(fd); err != nil {
		return pathErr("fsync", path, "", err)
	}
	return nil
}

// fsOf cannot tell the file system here: it reports "unknown" and remote,
// the cautious side.
func fsOf(fd int, path string) (FS, error) {
	if _, err := pathOf(fd); err != nil {
		return FS{}, pathErr("statfs", path, "", err)
	}
	return FS{Name: "unknown", Remote: true, NameMax: 255}, nil
}

// fsAt cannot tell either: "unknown" and remote.
func fsAt(dirfd int, dir, name string) (FS, error) {
	p, err := join(dirfd, name)
	if err != nil {
		return FS{}, pathErr("statfs", dir, name, err)
	}
	if _, err := os.Lstat(p); err != nil {
		return FS{}, pathErr("statfs", dir, name, underlying(err))
	}
	return FS{Name: "unknown", Remote: true, NameMax: 255}, nil
}

func openFileAt(dirfd int, dir, name string, flag int, mode uint32) (*os.File, error) {
	base, err := pathOf(dirfd)
	if err != nil {
		return nil, pathErr("open", dir, name, err)
	}
	p := filepath.Join(base, name)
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, pathErr("open", dir, name, syscall.ELOOP)
		}
		return nil, pathErr("open", dir, name, ErrNotRegular)
	}
	f, err := os.OpenFile(p, flag, fs.FileMode(mode))
	if err != nil {
		return nil, pathErr("open", dir, name, underlying(err))
	}
	return f, nil
}

func openDirFileAt(dirfd int, dir, name string) (*os.File, error) {
	f, err := openFileAt(dirfd, dir, name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		return nil, pathErr("open", dir, name, syscall.ENOTDIR)
	}
	return f, nil
}

func readlinkAt(dirfd int, dir, name string, max int) (string, error) {
	base, err := pathOf(dirfd)
	if err != nil {
		return "", pathErr("readlink", dir, name, err)
	}
	t, err := os.Readlink(filepath.Join(base, name))
	if err != nil {
		return "", pathErr("readlink", dir, name, underlying(err))
	}
	if len(t) > max {
		return "", pathErr("readlink", dir, name, errTooLong)
	}
	return t, nil
}

// Package fsx is the thin layer of file-system system calls that lockctl
// needs and the standard library does not give: everything relative to an
// open directory file descriptor, never following a symbolic link, never
// blocking on a FIFO or a device, and never renaming over an existing entry.
//
// Every function retries EINTR and returns *fs.PathError naming the full
// path it worked on, so a message can always tell the operator where.
package fsx

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrNoReplaceUnsupported is returned by RenameNoReplace on a file system
// that cannot rename without replacing (NFS, and ext4 before Linux 3.15),
// and on every platform other than Linux for now (docs/platforms.md).
var ErrNoReplaceUnsupported = errors.New("file system cannot rename without replacing (no RENAME_NOREPLACE)")

// ErrNotRegular is wrapped when a record to be read is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ReadDir lists the directory open at fd, from its start. Each entry carries
// the type the kernel reported, without a further stat; entries the file
// system gave no type for come back as fs.ModeIrregular. On an error it
// returns what it read before it.
func ReadDir(fd int, dir string) ([]Entry, error) {
	var out []Entry
	err := ReadDirFunc(fd, dir, func(name string, typ fs.FileMode) {
		out = append(out, Entry{Name: strings.Clone(name), Type: typ})
	})
	return out, err
}

// IsNotEmpty reports whether err says a directory was not empty (rmdir, or
// a rename onto a directory that holds something). POSIX allows EEXIST for
// it as well as ENOTEMPTY.
func IsNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}

// IsNotDirOrLink reports whether err says OpenDirAt met something that is
// not a directory, or a symbolic link it refused to follow.
func IsNotDirOrLink(err error) bool {
	return errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP)
}

// Stat is what lockctl needs to know about one directory entry: enough to
// tell whether the entry it reads later is the entry it judged.
type Stat struct {
	Dev   uint64
	Ino   uint64
	Mode  fs.FileMode
	Nlink uint64
	Uid   uint32
	Size  int64
	// Mtime is the last modification time.
	Mtime time.Time
	// Btime is the birth time, or the zero time where the file system does
	// not record one.
	Btime time.Time
}

// SameFile reports whether s and t name the same inode on the same device.
func (s Stat) SameFile(t Stat) bool { return s.Dev == t.Dev && s.Ino == t.Ino }

// Same reports whether t is still the entry s described: the same inode of
// the same type and, where the file system records it, the same birth time,
// so that an inode number reused by a new entry does not pass for the old.
func (s Stat) Same(t Stat) bool {
	return s.SameFile(t) && s.Btime.Equal(t.Btime) && s.Mode.Type() == t.Mode.Type()
}

// Created is the best available estimate of when the entry was made: its
// birth time where the file system keeps one, otherwise its modification
// time (which for a directory only ever moves forward from its creation).
func (s Stat) Created() time.Time {
	if !s.Btime.IsZero() {
		return s.Btime
	}
	return s.Mtime
}

// Entry is one name read from a directory, with the type the kernel reported
// for it (fs.ModeType bits; fs.ModeIrregular when the file system did not
// say, in which case the caller must Lstat before relying on it).
type Entry struct {
	Name string
	Type fs.FileMode
}

func pathErr(op, dir, name string, err error) error {
	p := dir
	if name != "" {
		p = filepath.Join(dir, name)
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

// FS describes the file system a directory is on.
type FS struct {
	// Name is a short name for the file system type ("ext4", "nfs", ...),
	// or its magic number in hex when lockctl does not know it.
	Name string
	// Remote is true for network and user-space file systems (NFS, SMB,
	// FUSE, ...), where a pid recorded in a file may belong to another host
	// and renameat2(RENAME_NOREPLACE) may be missing.
	Remote bool
}

// MoveNoReplace moves the file old (in the directory open at olddirfd) to
// new (in the one open at newdirfd), never replacing anything at new: with
// RenameNoReplace, or, on a file system that cannot rename without
// replacing (NFS), with link(2), which never replaces either, then an
// unlink of old; for a moment the file has both names then. It fails with
// fs.ErrExist if new exists. Only a file can be moved the second way (a
// directory cannot be linked): use RenameNoReplace for directories.
func MoveNoReplace(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	err := RenameNoReplace(olddirfd, olddir, old, newdirfd, newdir, new)
	if errors.Is(err, ErrNoReplaceUnsupported) {
		if err = Linkat(olddirfd, olddir, old, newdirfd, newdir, new); err == nil {
			err = Unlinkat(olddirfd, olddir, old, false)
		}
	}
	return err
}

// The calls below are the whole of fsx's system calls; each platform
// implements them in its own file (fsx_linux.go, fsx_bsd.go, fsx_unix.go,
// fsx_path.go for the rest), and their contract is here, once.

// OpenRoot opens the directory at path, which the operator named. Symbolic
// links in path itself are followed, because the operator chose them; nothing
// below it is. The caller closes the descriptor.
func OpenRoot(path string) (int, error) {
	return openRoot(path)
}

// OpenDirAt opens the directory name inside dirfd without following a
// symbolic link: a symlink there fails with ELOOP or ENOTDIR instead of
// leading out of the registry. dir is dirfd's path, for messages only.
func OpenDirAt(dirfd int, dir, name string) (int, error) {
	return openDirAt(dirfd, dir, name)
}

// Close closes fd, ignoring EINTR as Linux requires.
func Close(fd int) {
	closeFd(fd)
}

// Linkat makes new in newdirfd a hard link to old in olddirfd without
// following a symbolic link; it fails with EEXIST if new exists, on every
// file system.
func Linkat(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	return linkat(olddirfd, olddir, old, newdirfd, newdir, new)
}

// Unlinkat removes the file name inside dirfd (or, with dir true, the empty
// directory name). It never follows a symbolic link.
func Unlinkat(dirfd int, dirPath, name string, dir bool) error {
	return unlinkat(dirfd, dirPath, name, dir)
}

// OpenDirNoFollow opens the absolute directory path one component at a time
// from "/", refusing a symbolic link at every step, so a link swapped into
// the path since it was walked cannot redirect what happens inside it.
func OpenDirNoFollow(path string) (int, error) {
	return openDirNoFollow(path)
}

// MkdirAt makes the directory name inside dirfd.
func MkdirAt(dirfd int, dir, name string, mode uint32) error {
	return mkdirAt(dirfd, dir, name, mode)
}

// CreateAt creates the file name inside dirfd, which must not exist yet,
// writes data to it, and fsyncs it before closing, so that after a power
// loss the file holds data or does not exist. It returns the file's Stat.
func CreateAt(dirfd int, dir, name string, data []byte, mode uint32) (Stat, error) {
	return createAt(dirfd, dir, name, data, mode)
}

// Fsync flushes fd (a file or a directory) to stable storage.
//
// Where the platform offers no way to flush a directory, that is a no-op.
func Fsync(fd int, path string) error {
	return fsync(fd, path)
}

// ReadFileAt reads at most max bytes of the regular file name inside dirfd,
// without following a symbolic link and without blocking: a FIFO, socket or
// device swapped in is refused (ErrNotRegular) after a non-blocking open that
// cannot hang. It returns the bytes, the Stat of the very file that was read,
// and whether the file held more than max bytes.
func ReadFileAt(dirfd int, dir, name string, max int) (data []byte, st Stat, truncated bool, err error) {
	return readFileAtFd(dirfd, dir, name, max)
}

// Lstatat describes the entry name inside dirfd without following it.
func Lstatat(dirfd int, dir, name string) (Stat, error) {
	return lstatat(dirfd, dir, name)
}

// Fstat describes the open file fd. path is for messages only.
func Fstat(fd int, path string) (Stat, error) {
	return fstat(fd, path)
}

// ReadDirFunc calls f for each entry of the directory open at fd, from its
// start, in kernel order, with its name and type. The name is only lent: it is valid
// until f returns, and f must strings.Clone what it keeps. This lets a walk
// skip the many names it does not care about without allocating them.
func ReadDirFunc(fd int, dir string, f func(name string, typ fs.FileMode)) error {
	return readDirFunc(fd, dir, f)
}

// RenameNoReplace renames old in olddirfd to new in newdirfd, failing with
// EEXIST if anything, even an empty directory, stands at new. On a file
// system without RENAME_NOREPLACE it returns ErrNoReplaceUnsupported and
// renames nothing.
//
// On macOS it is renameatx_np(RENAME_EXCL); on FreeBSD and every other
// platform it always refuses with ErrNoReplaceUnsupported, renaming nothing
// (docs/platforms.md).
func RenameNoReplace(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	return renameNoReplace(olddirfd, olddir, old, newdirfd, newdir, new)
}

// FSOf reports the file system of the open directory fd.
//
// Where the platform cannot tell (not Linux, macOS or FreeBSD), it reports
// "unknown" and remote, the cautious side.
func FSOf(fd int, path string) (FS, error) {
	return fsOf(fd, path)
}

// DevIno returns the device and inode numbers of fi, from os.Stat or
// os.Lstat, where the platform reports them.
//
// Where the platform does not report them, ok is false.
func DevIno(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	return devIno(fi)
}

// RemoveWith removes the directory name inside dirfd together with the one
// file it may hold, file, never following a symbolic link: the file first,
// then the directory, which fails (ENOTEMPTY) if anything else is in it.
// A file that is not there is no error; the directory's removal is the
// answer.
func RemoveWith(dirfd int, dir, name, file string) error {
	if sfd, err := OpenDirAt(dirfd, dir, name); err == nil {
		_ = Unlinkat(sfd, filepath.Join(dir, name), file, false)
		Close(sfd)
	}
	return Unlinkat(dirfd, dir, name, true)
}

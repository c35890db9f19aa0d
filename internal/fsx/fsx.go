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
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrNoReplaceUnsupported is returned by Dir.RenameNoReplace on a file system
// that cannot rename without replacing (NFS, and ext4 before Linux 3.15),
// and on every platform other than Linux for now (docs/platforms.md).
var ErrNoReplaceUnsupported = errors.New("file system cannot rename without replacing (no RENAME_NOREPLACE)")

// errTooLong is wrapped when a link's target is longer than asked for.
var errTooLong = errors.New("the link's target is longer than a lock record may be")

// ErrNotRegular is wrapped when a record to be read is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// IsNotEmpty reports whether err says a directory was not empty (rmdir, or
// a rename onto a directory that holds something). POSIX allows EEXIST for
// it as well as ENOTEMPTY.
func IsNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}

// IsNotDirOrLink reports whether err says Dir.OpenDir met something that is
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
	// Ctime is the last change of the inode (a write, a rename, a chmod):
	// a program can set Mtime back, never Ctime. The zero time where the
	// platform does not say.
	Ctime time.Time
	// Btime is the birth time, or the zero time where the file system does
	// not record one.
	Btime time.Time
	// Mount is the id of the mount the entry is on (statx's stx_mnt_id,
	// the first field of /proc/self/mountinfo), valid only where HasMount
	// is set (Linux 5.8 and later). MountRoot says the entry is the root
	// of a mount: a mount point, seen from the directory holding it.
	Mount     uint64
	HasMount  bool
	MountRoot bool
}

// OnMountOf reports whether s is on the mount of dir, the Stat of the
// directory holding it, and is not a mount point itself: then it is on
// dir's file system, and dir's FS describes it. Where either mount id is
// unknown, st_dev decides; that may say false for one file system (btrfs
// subvolumes), which only costs a look at the entry's own file system.
func (s Stat) OnMountOf(dir Stat) bool {
	if s.MountRoot {
		return false
	}
	if s.HasMount && dir.HasMount {
		return s.Mount == dir.Mount
	}
	return s.Dev == dir.Dev
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
	// and renameat2(RENAME_NOREPLACE) may be missing; for one lockctl does
	// not know; and, on Linux, for an overlay or eCryptfs not every layer of
	// which is found here on a local file system (Name then says what it is
	// on: "overlay on nfs", "overlay on layers not found here").
	Remote bool
	// NameMax is the longest file name it takes, in bytes (f_namelen: 255
	// on most, 143 on eCryptfs).
	NameMax int
}

// Dir is an open directory: its descriptor, and the path it was opened by,
// which is used in messages only. Every method works relative to the
// descriptor and never follows a symbolic link at name, so a link swapped in
// cannot lead out of the directory. Neither the zero Dir nor one returned
// with an error is open, and closing either does nothing.
//
// The methods are the whole of fsx's system calls; each platform implements
// them in its own file (fsx_linux.go, fsx_bsd.go, fsx_unix.go, fsx_path.go
// for the rest), and their contract is here, once.
type Dir struct {
	fd   int
	path string
	open bool
	// listed is set once the descriptor has been read from: a directory
	// opened and listed once, as almost every one in a walk is, needs no
	// seek back to its start (a system call per directory).
	listed *bool
}

func opened(fd int, path string, err error) Dir {
	if err != nil {
		return Dir{fd: fd, path: path}
	}
	return Dir{fd: fd, path: path, open: true, listed: new(bool)}
}

// OpenRoot opens the directory at path, which the operator named. Symbolic
// links in path itself are followed, because the operator chose them; nothing
// below it is. The caller closes the Dir.
func OpenRoot(path string) (Dir, error) {
	fd, err := openRoot(path)
	return opened(fd, path, err), err
}

// OpenDir opens the absolute directory path one component at a time from
// "/", refusing a symbolic link at every step, so a link swapped into the
// path since it was walked cannot redirect what happens inside it.
func OpenDir(path string) (Dir, error) {
	fd, err := openDirNoFollow(path)
	return opened(fd, path, err), err
}

// Path is the path d was opened by.
func (d Dir) Path() string { return d.path }

// Join is the path of name inside d.
func (d Dir) Join(name string) string { return filepath.Join(d.path, name) }

// OpenDir opens the directory name inside d without following a symbolic
// link: a symlink there fails with ELOOP or ENOTDIR (IsNotDirOrLink).
func (d Dir) OpenDir(name string) (Dir, error) {
	fd, err := openDirAt(d.fd, d.path, name)
	return opened(fd, d.Join(name), err), err
}

// Close closes d, ignoring EINTR as Linux requires.
func (d Dir) Close() {
	if d.open {
		closeFd(d.fd)
	}
}

// Stat describes d itself.
func (d Dir) Stat() (Stat, error) { return fstat(d.fd, d.path) }

// Lstat describes the entry name inside d without following it.
func (d Dir) Lstat(name string) (Stat, error) { return lstatat(d.fd, d.path, name) }

// Mkdir makes the directory name inside d.
func (d Dir) Mkdir(name string, mode uint32) error { return mkdirAt(d.fd, d.path, name, mode) }

// Create creates the file name inside d, which must not exist yet, writes
// data to it, and fsyncs it before closing, so that after a power loss the
// file holds data or does not exist. It returns the file's Stat.
func (d Dir) Create(name string, data []byte, mode uint32) (Stat, error) {
	return createAt(d.fd, d.path, name, data, mode)
}

// ReadFile reads at most max bytes of the regular file name inside d,
// without following a symbolic link and without blocking: a FIFO, socket or
// device swapped in is refused (ErrNotRegular) after a non-blocking open that
// cannot hang. It returns the bytes, the Stat of the very file that was read,
// and whether the file held more than max bytes.
func (d Dir) ReadFile(name string, max int) (data []byte, st Stat, truncated bool, err error) {
	return readFileAtFd(d.fd, d.path, name, max)
}

// OpenFile opens the entry name inside d with flag (os.O_RDONLY, O_RDWR,
// O_CREATE, O_EXCL; a directory opens read-only), never following a
// symbolic link and never blocking on a FIFO or device: it is opened
// non-blocking, and anything but a regular file or a directory is refused
// (ErrNotRegular). For holding a kernel lock on it: the caller closes the
// file.
func (d Dir) OpenFile(name string, flag int, mode uint32) (*os.File, error) {
	return openFileAt(d.fd, d.path, name, flag, mode)
}

// OpenDirFile opens the directory name inside d as a file, never following
// a symbolic link, for holding a kernel lock on it: the caller closes the
// file. A directory cannot block an open, so it is opened blocking, which
// spares the type check and the poller OpenFile's non-blocking open costs.
func (d Dir) OpenDirFile(name string) (*os.File, error) {
	return openDirFileAt(d.fd, d.path, name)
}

// Readlink reads the target of the symbolic link name inside d, at most
// max bytes of it, without following it: a lock some programs make as a
// link whose target is their record (Mercurial, Emacs, Chromium, Firefox).
func (d Dir) Readlink(name string, max int) (string, error) {
	return readlinkAt(d.fd, d.path, name, max)
}

// Remove removes the file name inside d; it never follows a symbolic link.
func (d Dir) Remove(name string) error { return unlinkat(d.fd, d.path, name, false) }

// Rmdir removes the empty directory name inside d.
func (d Dir) Rmdir(name string) error { return unlinkat(d.fd, d.path, name, true) }

// RemoveWith removes the directory name inside d together with the one file
// it may hold, file, never following a symbolic link: the file first, then
// the directory, which fails (ENOTEMPTY) if anything else is in it. A file
// that is not there is no error; the directory's removal is the answer.
func (d Dir) RemoveWith(name, file string) error {
	if sub, err := d.OpenDir(name); err == nil {
		_ = sub.Remove(file)
		sub.Close()
	}
	return d.Rmdir(name)
}

// Sync flushes d to stable storage, so that the entries made or removed in
// it survive a power loss. Where the platform offers no way to flush a
// directory, that is a no-op.
func (d Dir) Sync() error { return fsync(d.fd, d.path) }

// Each calls f for each entry of d, from its start, in kernel order, with
// its name and type. The name is only lent: it is valid until f returns, and
// f must strings.Clone what it keeps. This lets a walk skip the many names
// it does not care about without allocating them.
func (d Dir) Each(f func(name string, typ fs.FileMode)) error {
	rewind := d.listed == nil || *d.listed
	if d.listed != nil {
		*d.listed = true // before reading: a read that fails midway moves the offset too
	}
	return readDirFunc(d.fd, d.path, rewind, f)
}

// List lists d from its start. Each entry carries the type the kernel
// reported, without a further stat; entries the file system gave no type for
// come back as fs.ModeIrregular. On an error it returns what it read before
// it.
func (d Dir) List() ([]Entry, error) {
	var out []Entry
	err := d.Each(func(name string, typ fs.FileMode) {
		out = append(out, Entry{Name: strings.Clone(name), Type: typ})
	})
	return out, err
}

// FS reports the file system d is on.
//
// Where the platform cannot tell (not Linux, macOS or FreeBSD), it reports
// "unknown" and remote, the cautious side.
func (d Dir) FS() (FS, error) { return fsOf(d.fd, d.path) }

// FSAt describes the file system the entry name in d is on, without
// following a symbolic link at name: for a mount point (a file or a
// directory bound or mounted over name) that is the mounted file system,
// not d's. If the entry is replaced meanwhile, it describes the new one.
func (d Dir) FSAt(name string) (FS, error) { return fsAt(d.fd, d.path, name) }

// Link makes new in to a hard link to old in d without following a symbolic
// link; it fails with EEXIST if new exists, on every file system.
func (d Dir) Link(old string, to Dir, new string) error {
	return linkat(d.fd, d.path, old, to.fd, to.path, new)
}

// RenameNoReplace renames old in d to new in to, failing with EEXIST if
// anything, even an empty directory, stands at new. On a file system without
// RENAME_NOREPLACE it returns ErrNoReplaceUnsupported and renames nothing.
//
// On macOS it is renameatx_np(RENAME_EXCL); on FreeBSD and every other
// platform it always refuses with ErrNoReplaceUnsupported, renaming nothing
// (docs/platforms.md).
func (d Dir) RenameNoReplace(old string, to Dir, new string) error {
	return renameNoReplace(d.fd, d.path, old, to.fd, to.path, new)
}

// MoveNoReplace moves the file old in d to new in to, never replacing
// anything at new: with RenameNoReplace, or, on a file system that cannot
// rename without replacing (NFS), with link(2), which never replaces either,
// then an unlink of old; for a moment the file has both names then. It fails
// with fs.ErrExist if new exists. Only a file can be moved the second way (a
// directory cannot be linked): use RenameNoReplace for directories.
func (d Dir) MoveNoReplace(old string, to Dir, new string) error {
	err := d.RenameNoReplace(old, to, new)
	if errors.Is(err, ErrNoReplaceUnsupported) {
		if err = d.Link(old, to, new); err == nil {
			err = d.Remove(old)
		}
	}
	return err
}

// WithFd runs fn on the descriptor of the open file f, without taking it
// out of Go's hands (f.Fd would put it in blocking mode, and f may close it
// once fn returns).
func WithFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// DevIno returns the device and inode numbers of fi, from os.Stat or
// os.Lstat, where the platform reports them.
//
// Where the platform does not report them, ok is false.
func DevIno(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	return devIno(fi)
}

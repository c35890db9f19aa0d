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

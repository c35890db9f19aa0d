package scan

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
)

// The producers whose locks lockctl reads by their own rules (docs/formats.md).
const (
	ProducerGit       = "git"
	ProducerPostgres  = "postgresql"
	ProducerMercurial = "mercurial"
	ProducerEmacs     = "emacs"
	ProducerChromium  = "chromium"
	ProducerFirefox   = "firefox"
	ProducerVim       = "vim"
	ProducerFilelock  = "filelock"
	// ProducerProperLockfile is npm's proper-lockfile: an empty <file>.lock
	// directory beside <file>, whose mtime its holder keeps refreshing.
	ProducerProperLockfile = "proper-lockfile"
)

// Vim is what a vim swap file's block 0 says beyond its pid.
type Vim struct {
	// File is the file being edited.
	File string
	// Dirty says the swap holds changes that were never saved: the one
	// copy of someone's work, to recover with vim -r, never to remove.
	Dirty bool
}

// Repo is a git repository, named by its common git directory (the one
// that holds objects and refs, shared by every worktree): its device and
// inode, so that bind mounts, containers and worktrees that name it by
// other paths are the same repository.
type Repo struct {
	Path     string
	Dev, Ino uint64
}

// Postgres is what a PostgreSQL lock file holds beyond its pid
// (src/backend/utils/init/miscinit.c, CreateLockFile; the line numbers are
// LOCK_FILE_LINE_* in src/include/miscadmin.h).
type Postgres struct {
	// DataDir is line 2: the data directory.
	DataDir string
	// Standalone says line 1 was negative: a standalone backend, not a
	// postmaster.
	Standalone bool
	// ShmKey and ShmID are line 7 of postmaster.pid, the System V shared
	// memory segment of the cluster; HasShm is false when the line is not
	// there (the file is written in several steps) or for the socket lock.
	ShmKey, ShmID uint64
	HasShm        bool
}

// recognise names the producer of a lock file just read, from its place,
// name and bytes, and reads what that producer's rule needs.
func recognise(l *Lock, r *Record) {
	link := linkProducer(l.Dir, l.Name)
	switch {
	case IsVimSwapName(l.Name) && strings.HasPrefix(string(r.Raw), "b0VIM "):
		if h, v, err := ParseVimSwap(r.Raw); err == nil {
			l.Format, l.Producer, l.Vim = FormatVim, ProducerVim, v
			r.Holder, r.Err = h, nil
		}
	case l.Name == "postmaster.pid" || isPGSocketLock(l.Name):
		if h, pg, err := ParsePostgres(r.Raw, l.Name == "postmaster.pid"); err == nil {
			l.Format, l.Producer, l.Postgres = FormatPostgres, ProducerPostgres, pg
			r.Holder, r.Err = h, nil
		}
	case r.Holder == nil && (link == ProducerMercurial || link == ProducerEmacs):
		// Where symbolic links fail, Mercurial and Emacs write the same
		// bytes into a regular file.
		p := link
		if h, err := ParseLinkLock(p, string(r.Raw)); err == nil {
			l.Format, l.Producer = Format(p), p
			r.Holder, r.Err = h, nil
		}
	case r.Holder == nil && l.Format == FormatUnrecognized && looksLikeFilelock(r.Raw):
		if h, err := ParseFilelock(r.Raw); err == nil {
			l.Format, l.Producer = FormatFilelock, ProducerFilelock
			r.Holder, r.Err = h, nil
		}
	case strings.HasSuffix(l.Name, ".lock") && r.Holder == nil:
		if repo, ok := gitRepoOf(l.Dir); ok {
			l.Producer, l.Repo = ProducerGit, repo
		}
	}
}

// isPGSocketLock reports whether name is a PostgreSQL socket's lock file,
// .s.PGSQL.<port>.lock.
func isPGSocketLock(name string) bool {
	port, ok := strings.CutPrefix(name, ".s.PGSQL.")
	if port, ok = strings.CutSuffix(port, ".lock"); !ok || port == "" {
		return false
	}
	_, err := strconv.ParseUint(port, 10, 16)
	return err == nil
}

// ParsePostgres parses a PostgreSQL lock file: the pid on line 1 (negative
// for a standalone backend), the absolute data directory on line 2, the
// start time (seconds since the epoch, the postmaster's own clock when it
// started: not the kernel's start time of the process) on line 3, and in
// postmaster.pid (dataDir) "<key> <id>" of its shared memory on line 7.
// Lines after the second may be missing: the file is written in steps.
func ParsePostgres(b []byte, dataDir bool) (*Holder, *Postgres, error) {
	const f = FormatPostgres
	if len(b) == 0 || !strings.HasSuffix(string(b), "\n") {
		return nil, nil, malformed(f, "no final newline")
	}
	ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(ls) < 2 {
		return nil, nil, malformed(f, "%d lines, want at least 2", len(ls))
	}
	text := strings.TrimPrefix(ls[0], "-")
	pid, ok := parsePid(text)
	if !ok || !isDigits(text) {
		return nil, nil, malformed(f, "line 1 is not a pid")
	}
	if !strings.HasPrefix(ls[1], "/") {
		return nil, nil, malformed(f, "line 2 is not a data directory")
	}
	h := &Holder{Pid: pid, PidText: text, Command: "postgres"}
	pg := &Postgres{DataDir: ls[1], Standalone: ls[0][0] == '-'}
	if len(ls) >= 3 {
		if s, err := strconv.ParseInt(strings.TrimSpace(ls[2]), 10, 64); err == nil && s > 0 {
			h.Since = time.Unix(s, 0)
		}
	}
	if dataDir && len(ls) >= 7 {
		if k, id, ok := strings.Cut(strings.TrimSpace(ls[6]), " "); ok {
			kv, err1 := strconv.ParseUint(strings.TrimSpace(k), 10, 64)
			iv, err2 := strconv.ParseUint(strings.TrimSpace(id), 10, 64)
			if err1 == nil && err2 == nil {
				pg.ShmKey, pg.ShmID, pg.HasShm = kv, iv, true
			}
		}
	}
	return h, pg, nil
}

// gitRepoOf finds the git repository whose git directory holds dir: the
// nearest ancestor (dir included) that is a git directory, then its common
// directory (a worktree's git directory names it in "commondir"). Only a
// path with a component that is ".git" or ends in ".git" is looked at, so
// that no lock elsewhere costs a look up the tree.
func gitRepoOf(dir string) (*Repo, bool) {
	if !strings.Contains(dir+"/", ".git/") {
		return nil, false
	}
	for a, i := dir, 0; i < 64; a, i = filepath.Dir(a), i+1 {
		if IsGitDir(a) {
			common := a
			if b, err := os.ReadFile(filepath.Join(a, "commondir")); err == nil {
				c := strings.TrimSpace(string(b))
				if !filepath.IsAbs(c) {
					c = filepath.Join(a, c)
				}
				common = c
			}
			fi, err := os.Stat(common)
			if err != nil {
				return nil, false
			}
			dev, ino, ok := fsx.DevIno(fi)
			return &Repo{Path: common, Dev: dev, Ino: ino}, ok
		}
		if a == "/" || a == "." {
			break
		}
	}
	return nil, false
}

// IsGitDir reports whether dir is a git directory: a HEAD file, and objects
// (a repository's) or commondir (a worktree's).
func IsGitDir(dir string) bool {
	if fi, err := os.Lstat(filepath.Join(dir, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if fi, err := os.Lstat(filepath.Join(dir, "objects")); err == nil && fi.IsDir() {
		return true
	}
	_, err := os.Lstat(filepath.Join(dir, "commondir"))
	return !errors.Is(err, fs.ErrNotExist) && err == nil
}

// linkProducer says whose symbolic-link lock name in dir would be, by place
// and name alone; the target must then parse as that producer's.
func linkProducer(dir, name string) string {
	base := filepath.Base(dir)
	switch {
	case (name == "wlock" || name == "lock") && base == ".hg",
		name == "lock" && base == "store" && filepath.Base(filepath.Dir(dir)) == ".hg":
		return ProducerMercurial
	case strings.HasPrefix(name, ".#") && len(name) > 2:
		return ProducerEmacs
	case name == "SingletonLock":
		return ProducerChromium
	case name == "lock":
		return ProducerFirefox
	}
	return ""
}

// ParseLinkLock parses the target of a producer's symbolic-link lock:
//
//   - Mercurial (mercurial/lock.py, _getlockprefix and lock._trylock):
//     "<host>:<pid>", or "<host>/<pid namespace inode, lowercase hex>:<pid>"
//     on Linux where /proc/self/ns/pid could be read;
//   - Emacs (src/filelock.c, lock_file_1 and current_lock_owner):
//     "<user>@<host>.<pid>", then ":<boot time, seconds since the epoch>"
//     where it knows the boot time; the host may hold dots, the pid is
//     after the last one;
//   - Chromium (chrome/browser/process_singleton_posix.cc): "<host>-<pid>",
//     split at the last "-";
//   - Firefox (profile/dirserviceprovider/nsProfileLock.cpp,
//     LockWithSymlink): "<IPv4 address>:<pid>", the pid after a "+" in
//     versions that also take an fcntl lock on .parentlock.
func ParseLinkLock(producer, target string) (*Holder, error) {
	f := Format(producer)
	pidOf := func(s string) (int64, bool) {
		p, ok := parsePid(s)
		return p, ok && isDigits(s) && p > 0
	}
	switch producer {
	case ProducerMercurial:
		prefix, pidText, ok := cutLast(target, ":")
		pid, okp := pidOf(pidText)
		if !ok || !okp || prefix == "" {
			return nil, malformed(f, "the target is not <host>[/<namespace>]:<pid>")
		}
		h := &Holder{Pid: pid, PidText: pidText, Host: prefix, Command: "hg"}
		if host, ns, ok := cutLast(prefix, "/"); ok {
			ino, err := strconv.ParseUint(ns, 16, 64)
			if err != nil || host == "" || ns != strings.ToLower(ns) {
				return nil, malformed(f, "the pid namespace %q is not a lowercase hex inode", ns)
			}
			h.Host, h.PidNS = host, "pid:["+strconv.FormatUint(ino, 10)+"]"
		}
		return h, nil
	case ProducerEmacs:
		at := strings.LastIndexByte(target, '@')
		dot := strings.LastIndexByte(target, '.')
		if at < 0 || dot < at+2 {
			return nil, malformed(f, "the target is not <user>@<host>.<pid>[:<boot time>]")
		}
		pidText, boot, hasBoot := strings.Cut(target[dot+1:], ":")
		pid, ok := pidOf(pidText)
		if !ok {
			return nil, malformed(f, "the pid %q is not a process id", pidText)
		}
		h := &Holder{Pid: pid, PidText: pidText, User: target[:at], Host: target[at+1 : dot], Command: "emacs"}
		if hasBoot {
			s, err := strconv.ParseInt(boot, 10, 64)
			if err != nil || s < 0 || !isDigits(boot) {
				return nil, malformed(f, "the boot time %q is not a number of seconds", boot)
			}
			h.Booted = time.Unix(s, 0)
		}
		return h, nil
	case ProducerChromium:
		host, pidText, ok := cutLast(target, "-")
		pid, okp := pidOf(pidText)
		if !ok || !okp || host == "" {
			return nil, malformed(f, "the target is not <host>-<pid>")
		}
		return &Holder{Pid: pid, PidText: pidText, Host: host, Command: "chrome"}, nil
	case ProducerFirefox:
		addr, pidText, ok := cutLast(target, ":")
		pidText = strings.TrimPrefix(pidText, "+")
		pid, okp := pidOf(pidText)
		if !ok || !okp || !isIPv4(addr) {
			return nil, malformed(f, "the target is not <IPv4>:[+]<pid>")
		}
		return &Holder{Pid: pid, PidText: pidText, Host: addr, HostAddr: true, Command: "firefox"}, nil
	}
	return nil, malformed(f, "no such producer")
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func isIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 || !isDigits(p) || len(p) > 3 {
			return false
		}
	}
	return true
}

// IsVimSwapName reports whether name is vim's swap file for a file in the
// same directory: ".<name>.sw[a-p]" (src/memline.c, findswapname: ".swp",
// then ".swo", ".swn", ... down to ".swa").
func IsVimSwapName(name string) bool {
	if len(name) < 6 || name[0] != '.' {
		return false
	}
	ext := name[len(name)-4:]
	return ext[:3] == ".sw" && ext[3] >= 'a' && ext[3] <= 'p'
}

// ParseVimSwap reads block 0 of a vim swap file (src/memline.c, struct
// block0): "b0" at 0, "VIM <version>" at 2, the pid at 24 (4 bytes, lowest
// first: long_to_char), the user at 28 (40 bytes), the host at 68 (40),
// the file name at 108 (NUL-terminated), and at 1007 the dirty flag, 0x55
// when the buffer holds changes never saved (b0_dirty, the last byte of
// b0_fname).
func ParseVimSwap(b []byte) (*Holder, *Vim, error) {
	const f = FormatVim
	if len(b) < 1008 || string(b[:6]) != "b0VIM " {
		return nil, nil, malformed(f, "not a vim swap file's block 0")
	}
	cstr := func(off, n int) string {
		s := b[off : off+n]
		if i := bytes.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		return string(s)
	}
	pid := int64(b[24]) | int64(b[25])<<8 | int64(b[26])<<16 | int64(b[27])<<24
	if pid <= 0 {
		return nil, nil, malformed(f, "no pid in block 0")
	}
	h := &Holder{Pid: pid, PidText: strconv.FormatInt(pid, 10), User: cstr(28, 40), Host: cstr(68, 40), Command: "vim"}
	v := &Vim{File: cstr(108, 1007-108), Dirty: b[1007] == 0x55}
	return h, v, nil
}

// looksLikeFilelock: two or three lines, the first a pid.
func looksLikeFilelock(b []byte) bool {
	n := bytes.Count(b, []byte("\n"))
	first, _, _ := strings.Cut(string(b), "\n")
	return (n == 2 || n == 3) && isDigits(first) && first != ""
}

// ParseFilelock parses the lock file of Python's filelock SoftFileLock
// (tox-dev/filelock, src/filelock/_soft.py, _write_lock_info, and
// _identity.py): "<pid>\n<host>\n", and in versions that fence the pid,
// "<start token>\n" after: on Linux (boot id as a 128-bit integer << 64) |
// field 22 of /proc/<pid>/stat, on macOS the start time in microseconds.
// filelock breaks it only when the host is its own and the pid is gone, or
// runs with another start token (a recycled pid): the same fence as
// lockctl's own, so the token becomes the record's boot id and start time,
// a raw one (RawStart): filelock does not take its time namespace's
// boottime offset off.
func ParseFilelock(b []byte) (*Holder, error) {
	const f = FormatFilelock
	s := string(b)
	if !strings.HasSuffix(s, "\n") {
		return nil, malformed(f, "no final newline")
	}
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(ls) != 2 && len(ls) != 3 {
		return nil, malformed(f, "%d lines, want 2 or 3", len(ls))
	}
	pid, ok := parsePid(ls[0])
	if !ok || !isDigits(ls[0]) || pid <= 0 {
		return nil, malformed(f, "line 1 is not a pid")
	}
	if ls[1] == "" || strings.ContainsAny(ls[1], " \t\x00") {
		return nil, malformed(f, "line 2 is not a host name")
	}
	h := &Holder{Pid: pid, PidText: ls[0], Host: ls[1], Command: "python"}
	if len(ls) == 3 {
		tok, ok := new(big.Int).SetString(ls[2], 10)
		if !ok || tok.Sign() < 0 || !isDigits(ls[2]) || tok.BitLen() > 192 {
			return nil, malformed(f, "line 3 is not a start token")
		}
		low := new(big.Int).And(tok, new(big.Int).SetUint64(^uint64(0)))
		// Field 22 as the writer read it: in its own time namespace's
		// clock, offset and all.
		h.Start, h.HasStart, h.RawStart = low.Uint64(), true, true
		if boot := new(big.Int).Rsh(tok, 64); boot.Sign() > 0 {
			x := fmt.Sprintf("%032x", boot)
			h.BootID = x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
		}
	}
	return h, nil
}

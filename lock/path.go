package lock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/internal/shellquote"
	"github.com/lockctl/lockctl/scan"
)

// split checks that path can name a lock and splits it into the lock's
// absolute path, its directory and its name, the directory resolved
// (resolveDir).
func split(path string) (abs, dir, name string, err error) {
	abs, dir, name, err = splitName(path)
	if err != nil {
		return "", "", "", err
	}
	if dir, err = resolveDir(path, dir); err != nil {
		return "", "", "", err
	}
	return filepath.Join(dir, name), dir, name, nil
}

// openLockDir opens the directory of the lock path, resolved as split
// does, and returns it with the lock's absolute path and name. It opens the
// directory as given first, without following anything: only where that
// fails does it resolve symbolic links, so the common case costs one open.
func openLockDir(path string) (d fsx.Dir, abs, name string, err error) {
	abs, dir, name, err := splitName(path)
	if err != nil {
		return fsx.Dir{}, "", "", err
	}
	if d, err = fsx.OpenDir(dir); err == nil {
		return d, abs, name, nil
	}
	real, err := resolveDir(path, dir)
	if err != nil {
		return fsx.Dir{}, abs, name, err
	}
	abs = filepath.Join(real, name)
	d, err = fsx.OpenDir(real)
	return d, abs, name, err
}

// splitName checks that path can name a lock, and splits it into the
// lock's absolute path, its directory as given, and its name.
func splitName(path string) (abs, dir, name string, err error) {
	bad := func(why string, args ...any) (string, string, string, error) {
		return "", "", "", &BadPathError{Path: path, Why: fmt.Sprintf(why, args...)}
	}
	switch base := filepath.Base(path); {
	case path == "":
		return bad("names no lock: give the lock's path, such as /run/lock/app.lock")
	case strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)):
		return bad("ends in /, so it names a directory, not a lock: name the lock inside it, such as %s", filepath.Join(path, "app.lock"))
	case base == "." || base == "..":
		return bad("names a directory, not a lock: name the lock inside it, such as %s", filepath.Join(path, "app.lock"))
	}
	if lock, ok := scan.SideOf(filepath.Base(path)); ok {
		// doctor would read such a lock as a claim of that lock, and
		// --fix could finish the claim: remove it while it is held.
		return bad("is named as a side file of the lock %s (its build, claim or release), and doctor would read it as one: choose a name without lockctl's markers (.new. .dead. .pub. .rel. .holder)", lock)
	}
	if abs, err = filepath.Abs(path); err != nil {
		return "", "", "", err
	}
	dir, name = filepath.Split(abs)
	return abs, filepath.Clean(dir), name, nil
}

// resolveDir resolves the lock's directory dir (path is the lock's path,
// as given). It may be reached through symbolic links (/var/lock ->
// /run/lock on Debian and Fedora, or any link the operator made): they are
// followed here, once, to a directory, and from then on everything is
// relative to that directory's descriptor and follows nothing.
func resolveDir(path, dir string) (string, error) {
	bad := func(why string, args ...any) (string, error) {
		return "", &BadPathError{Path: path, Why: fmt.Sprintf(why, args...)}
	}
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return bad("is in a directory that does not exist: make it first (mkdir -p -- %s), or name a lock in one that does", shellWord(dir))
	}
	if err != nil {
		return "", fmt.Errorf("the lock's directory %s: %w", dir, err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return bad("is not in a directory: %s is not one", dir)
	}
	return real, nil
}

// shellWord quotes s for a POSIX shell so that a pasted command names the
// same bytes, control characters included ($'...').
func shellWord(s string) string { return shellquote.Quote(s) }

// CheckPath says why path cannot name a lock, as *BadPathError, or nil:
// what Acquire and ReleaseFor refuse before they touch anything.
func CheckPath(path string) error {
	_, _, _, err := split(path)
	var bad *BadPathError
	if errors.As(err, &bad) {
		return err
	}
	return nil
}

// roomForSides refuses a lock name that leaves too little room below the
// file system's name limit for lockctl's side files (scan.SideRoom): such a
// lock could be taken, but once its holder died no claim could be made to
// break it, and it would be wedged for good.
func roomForSides(fs fsx.FS, path, name string) error {
	if fs.NameMax <= 0 || len(name)+scan.SideRoom <= fs.NameMax {
		return nil
	}
	return &BadPathError{Path: path, Why: fmt.Sprintf("has a name of %d bytes; lockctl's side files add up to %d more, beyond this file system's limit of %d (%s), so once its holder died the lock could never be broken: use a name of at most %d bytes", len(name), scan.SideRoom, fs.NameMax, fs.Name, fs.NameMax-scan.SideRoom)}
}

package lock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// Keyed locks (issue 20): one lock per repository root, whatever path each
// caller names the tree by. docs/record-format.md, "Keyed locks".

// RegistryEnv names the environment variable that overrides
// DefaultRegistry.
const RegistryEnv = "LOCKCTL_REGISTRY"

// DefaultRegistry is the directory keyed locks are kept in, shared by every
// user and container of the host that sees it: sticky and world-writable,
// like /run/lock.
const DefaultRegistry = "/run/lock/lockctl"

// Root is the root of a tree, as a keyed lock names it.
type Root struct {
	// Path is the root's real path.
	Path string
	// Dev and Ino name it for the life of its file system: a bind mount
	// or a symbolic link changes the path, not these.
	Dev, Ino uint64
	// By says how it was found: "git", "hg", or "" when it was named as
	// the top itself.
	By string
}

// FindRoot resolves path to the root of the tree it is in: its real path,
// then the nearest directory at or above it holding .git (a directory, or
// the file of a worktree or submodule) or .hg, without crossing into
// another file system, as git does. A path inside no repository is refused
// unless top says it names the tree's top itself; a top that is inside a
// repository whose root is elsewhere is refused too, so that every caller
// of one tree gets the same key.
func FindRoot(path string, top bool) (Root, error) {
	bad := func(why string, args ...any) (Root, error) {
		return Root{}, &BadPathError{Path: path, Why: fmt.Sprintf(why, args...)}
	}
	if path == "" {
		return bad("is empty: name a directory in the tree")
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return bad("does not exist: name a directory in the tree")
		}
		return Root{}, fmt.Errorf("cannot resolve %s: %w", path, err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return Root{}, err
	}
	st, err := os.Stat(real)
	if err != nil {
		return Root{}, fmt.Errorf("cannot resolve %s: %w", path, err)
	}
	if !st.IsDir() {
		real = filepath.Dir(real)
		if st, err = os.Stat(real); err != nil {
			return Root{}, fmt.Errorf("cannot resolve %s: %w", path, err)
		}
	}
	dev, _, ok := fsx.DevIno(st)
	if !ok {
		return Root{}, fmt.Errorf("cannot key %s: this platform does not give a directory's device and inode", path)
	}
	found, by := "", ""
	for dir := real; ; {
		if m, err := os.Lstat(filepath.Join(dir, ".git")); err == nil && (m.IsDir() || m.Mode().IsRegular()) {
			found, by = dir, "git"
			break
		}
		if m, err := os.Lstat(filepath.Join(dir, ".hg")); err == nil && m.IsDir() {
			found, by = dir, "hg"
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			break
		}
		ust, err := os.Stat(up)
		if udev, _, _ := fsx.DevIno(ust); err != nil || udev != dev {
			break // another file system: git stops here too
		}
		dir = up
	}
	switch {
	case found == "" && !top:
		return bad("is inside no git or Mercurial repository: name the tree's top directory itself with --top, so that every caller names the same tree")
	case found != "" && top && found != real:
		return bad("is inside the %s repository %s, which is the tree's top: name that, or leave out --top", by, found)
	case found == "":
		found = real
	}
	if strings.ContainsAny(found, "\n\x00") {
		return bad("resolves to a root whose path holds a newline, which a lock record cannot carry")
	}
	rst, err := os.Stat(found)
	if err != nil {
		return Root{}, fmt.Errorf("cannot resolve %s: %w", path, err)
	}
	rdev, rino, _ := fsx.DevIno(rst)
	if top && found == real {
		by = ""
	}
	return Root{Path: found, Dev: rdev, Ino: rino, By: by}, nil
}

// Registry is the directory keyed locks are kept in: $LOCKCTL_REGISTRY, or
// DefaultRegistry.
func Registry() string {
	if r := os.Getenv(RegistryEnv); r != "" {
		return r
	}
	return DefaultRegistry
}

// LockName is the name of root's keyed lock in the registry, from its
// device and inode.
func (r Root) LockName() string { return fmt.Sprintf("root.%x.%x.lock", r.Dev, r.Ino) }

// RootLock returns the path of root's keyed lock, making the registry, sticky
// and world-writable, if it is not there. A registry that is a symbolic
// link, not a directory, or world-writable without the sticky bit (where
// anyone could remove anyone's lock) is refused.
func RootLock(root Root) (string, error) {
	reg := Registry()
	if !filepath.IsAbs(reg) {
		return "", fmt.Errorf("%s=%s is not an absolute path", RegistryEnv, reg)
	}
	st, err := os.Lstat(reg)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(reg, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("cannot make the registry %s: %w (set %s to a directory this user may write)", reg, err, RegistryEnv)
		} else if err == nil {
			// Mkdir's mode passes through the umask: set it outright.
			if err := os.Chmod(reg, 0o777|fs.ModeSticky); err != nil {
				return "", fmt.Errorf("cannot make the registry %s shared: %w", reg, err)
			}
		}
		st, err = os.Lstat(reg)
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("cannot use the registry %s: %w", reg, err)
	case st.Mode()&fs.ModeSymlink != 0:
		return "", fmt.Errorf("the registry %s is a symbolic link: lockctl never follows one out of a registry; point %s at the real directory", reg, RegistryEnv)
	case !st.IsDir():
		return "", fmt.Errorf("the registry %s is not a directory (%s)", reg, st.Mode().Type())
	case st.Mode().Perm()&0o002 != 0 && st.Mode()&fs.ModeSticky == 0:
		return "", fmt.Errorf("the registry %s is world-writable without the sticky bit, so anyone could remove anyone's lock: chmod 1777 %s", reg, reg)
	}
	return filepath.Join(reg, root.LockName()), nil
}

package scan

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// ProducerGit is git: <file>.lock under a git directory.
const ProducerGit = "git"

// Repo is a git repository, named by its common git directory (the one
// that holds objects and refs, shared by every worktree): its device and
// inode, so that bind mounts, containers and worktrees that name it by
// other paths are the same repository.
type Repo struct {
	Path     string
	Dev, Ino uint64
}

// git's lock keeps whatever format its bytes read as (they are the new
// file being written, and record no holder): it is git's by its place.
var formatGit = FormatSpec{
	Name:     "git",
	Producer: ProducerGit,
	Room:     "format_git.go",
	Names:    []string{"*.lock"},
	Rule:     "git records no holder and keeps no descriptor open while a commit waits in its editor: the lock is held while a git process works in the repository; git's own advice, once none does, is to remove the file.",
	Remedy:   "owner-less only when every git process was seen and none works in the repository; then --legacy-older-than may remove it.",
	Source:   "git lockfile.c (create, commit by rename), and its \"Another git process seems to be running\" message",
	Verdicts: []string{"live", "unknown", "ownerless"},
	claims: func(l *Lock, r *Record) bool {
		return strings.HasSuffix(l.Name, ".lock") && r.Holder == nil
	},
	read: func(l *Lock, _ *Record) {
		if repo, ok := gitRepoOf(l.Dir); ok {
			l.Producer, l.Repo = ProducerGit, repo
		}
	},
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

package scan

import (
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// The go command's module-cache locks, each a lockedfile.Mutex: an empty
// file opened O_RDWR|O_CREATE and held by flock(LOCK_EX) while the go
// command downloads or edits under it, never written and never removed
// (cmd/go/internal/lockedfile/mutex.go, MutexAt and Lock;
// internal/filelock/filelock_unix.go takes flock). Three places:
//   - <GOMODCACHE>/cache/download/<module>/@v/<version>.lock, one per
//     module version (cmd/go/internal/modfetch/cache.go, lockVersion:
//     CachePath(ctx, mod, "lock"));
//   - <GOMODCACHE>/cache/lock (modfetch/cache.go, SideLock);
//   - <GOMODCACHE>/cache/vcs/<sha256 hex>.lock, beside each VCS checkout
//     (modfetch/codehost/codehost.go, WorkDir: dir + ".lock").
var formatGoMod = FormatSpec{
	Name:       "gomod",
	Producer:   "go",
	Room:       "format_gomod.go",
	KnownNames: []string{"lock"},
	Rule:       "the go command holds a module-cache lock with flock while it downloads or edits under it; the empty file's existence means nothing.",
	Remedy:     "never removed: live while the kernel shows the lock, free when it shows none.",
	Source:     "golang/go src/cmd/go/internal/lockedfile/mutex.go (MutexAt, Lock); modfetch/cache.go (lockVersion, SideLock); modfetch/codehost/codehost.go (WorkDir)",
	Verdicts:   []string{"live", "free"},
	kernelCall: "flock",
	kernelFile: func(d fsx.Dir, path string) bool { return goModCacheLock(d, path) },
}

// goModCacheLock says path, an empty file in the open directory d, is one
// of the go command's module-cache locks.
func goModCacheLock(d fsx.Dir, path string) bool {
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	switch {
	case name == "lock":
		// cache/lock, beside the cache's download or vcs directory.
		if filepath.Base(dir) != "cache" {
			return false
		}
		for _, n := range []string{"download", "vcs"} {
			if st, err := d.Lstat(n); err == nil && st.Mode.IsDir() {
				return true
			}
		}
		return false
	case !strings.HasSuffix(name, ".lock") || len(name) == len(".lock"):
		return false
	case filepath.Base(dir) == "@v":
		// cache/download/<escaped module path>/@v/<version>.lock
		return strings.Contains(dir, "/cache/download/")
	case filepath.Base(dir) == "vcs" && filepath.Base(filepath.Dir(dir)) == "cache":
		return isHex(strings.TrimSuffix(name, ".lock"), 64)
	}
	return false
}

// isHex says s is n lower-case hexadecimal digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

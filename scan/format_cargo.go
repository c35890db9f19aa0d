package scan

import (
	"path/filepath"

	"github.com/lockctl/lockctl/internal/fsx"
)

// Cargo's lock files, each an empty file held by flock while cargo works,
// never written and never removed (rust-lang/cargo src/cargo/util/flock.rs:
// Filesystem::open_rw_exclusive_create and open_ro_shared_create take
// flock(2) LOCK_EX or LOCK_SH):
//   - $CARGO_HOME/.package-cache and .package-cache-mutate, the package
//     cache's download and mutate locks (src/cargo/util/cache_lock.rs,
//     CACHE_LOCK_NAME and MUTATE_NAME), beside .global-cache, registry/
//     or git/ in the same directory;
//   - <target>/<profile>/.cargo-lock, the build directory's lock
//     (src/cargo/core/compiler/layout.rs, Layout::new), beside the
//     profile's .fingerprint/ or deps/.
var formatCargo = FormatSpec{
	Name:       "cargo",
	Producer:   "cargo",
	Room:       "format_cargo.go",
	KnownNames: []string{".package-cache", ".package-cache-mutate", ".cargo-lock"},
	Rule:       "cargo holds its package cache and each build directory with flock while it runs; the empty file's existence means nothing.",
	Remedy:     "never removed: live while the kernel shows the lock, free when it shows none.",
	Source:     "rust-lang/cargo src/cargo/util/cache_lock.rs (CACHE_LOCK_NAME, MUTATE_NAME), src/cargo/util/flock.rs, src/cargo/core/compiler/layout.rs (Layout::new)",
	Verdicts:   []string{"live", "free"},
	kernelCall: "flock",
	kernelFile: func(d fsx.Dir, path string) bool {
		switch filepath.Base(path) {
		case ".package-cache", ".package-cache-mutate":
			return hasEntry(d, ".global-cache", "registry", "git", ".package-cache", ".package-cache-mutate")
		case ".cargo-lock":
			return hasEntry(d, ".fingerprint", "deps")
		}
		return false
	},
}

// hasEntry says the open directory d holds at least one of names (a
// neighbour that places a file in its producer's layout).
func hasEntry(d fsx.Dir, names ...string) bool {
	for _, n := range names {
		if _, err := d.Lstat(n); err == nil {
			return true
		}
	}
	return false
}

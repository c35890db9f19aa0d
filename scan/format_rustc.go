package scan

import (
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// rustc's incremental-compilation session locks: <crate dir>/s-<time>-<random>.lock,
// beside the session directory s-<time>-<random>-<hash or "working">, under
// a build's incremental/ directory (cargo's target/<profile>/incremental/).
// rustc creates it empty and holds it with fcntl(F_SETLK or F_SETLKW),
// F_WRLCK, on the whole file while the session runs; its own garbage
// collection deletes the lock files it can lock (rust-lang/rust
// compiler/rustc_incremental/src/persist/fs.rs, lock_file_path and
// lock_directory; compiler/rustc_data_structures/src/flock/linux.rs).
var formatRustc = FormatSpec{
	Name:       "rustc-incremental",
	Producer:   "rustc",
	Room:       "format_rustc.go",
	Names:      []string{"*.lock"},
	Rule:       "rustc holds an incremental session's lock with an fcntl lock while it compiles, and its own garbage collection removes the ones it can lock; the empty file's existence means nothing.",
	Remedy:     "never removed by lockctl (rustc collects its own): live while the kernel shows the lock, free when it shows none.",
	Source:     "rust-lang/rust compiler/rustc_incremental/src/persist/fs.rs (lock_file_path, lock_directory); compiler/rustc_data_structures/src/flock/linux.rs",
	Verdicts:   []string{"live", "free"},
	kernelCall: "fcntl",
	kernelFile: func(_ fsx.Dir, path string) bool {
		dir, name := filepath.Split(path)
		session, ok := strings.CutSuffix(name, ".lock")
		if !ok || filepath.Base(filepath.Dir(filepath.Clean(dir))) != "incremental" {
			return false
		}
		parts := strings.Split(session, "-")
		return len(parts) == 3 && parts[0] == "s" && isBase36(parts[1]) && isBase36(parts[2])
	},
}

// isBase36 says s is a non-empty run of lower-case letters and digits
// (rustc's base_n::CASE_INSENSITIVE encoding).
func isBase36(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

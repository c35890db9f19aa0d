package scan

import (
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// Exim's hints-database locks: <spool>/db/<name>.lockfile (retry, misc,
// wait-<transport>, callout, ratelimit, seen, serialize-…), opened O_RDWR
// (O_CREAT the first time) and held with fcntl(F_SETLKW), F_WRLCK or
// F_RDLCK on the whole file, while Exim opens the database beside it; never
// written (exim src/src/dbfn.c, dbfn_open: "The lock file is never written
// to, but we open it for writing so we can get a write lock").
var formatExim = FormatSpec{
	Name:       "exim",
	Producer:   "exim",
	Room:       "format_exim.go",
	KnownNames: []string{"*.lockfile"},
	Rule:       "Exim holds each hints database with an fcntl lock on <spool>/db/<name>.lockfile while it opens it; the empty file's existence means nothing.",
	Remedy:     "never removed: live while the kernel shows the lock, free when it shows none.",
	Source:     "Exim/exim src/src/dbfn.c (dbfn_open)",
	Verdicts:   []string{"live", "free"},
	kernelCall: "fcntl",
	kernelFile: func(_ fsx.Dir, path string) bool {
		dir, name := filepath.Split(path)
		return filepath.Base(filepath.Clean(dir)) == "db" && strings.HasSuffix(name, ".lockfile") && len(name) > len(".lockfile")
	},
}

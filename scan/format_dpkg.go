package scan

import "github.com/lockctl/lockctl/internal/fsx"

// dpkg's lock files, <admindir>/lock and <admindir>/lock-frontend, locked
// with fcntl(F_SETLK) on the whole file (guillemj/dpkg lib/dpkg/lock.c,
// lib/dpkg/dbmodify.c; doc/frontend.txt asks every frontend to lock them
// so). Found by the path that ends in them.
var formatDpkg = FormatSpec{
	Name:       "dpkg",
	Producer:   "dpkg",
	Room:       "format_dpkg.go",
	KnownNames: []string{"lock", "lock-frontend"},
	Rule:       "dpkg holds its database with an fcntl lock on each file while it runs; the file's existence means nothing.",
	Remedy:     "never removed: live while the kernel shows the lock, free when it shows none.",
	Source:     "guillemj/dpkg lib/dpkg/lock.c, lib/dpkg/dbmodify.c, doc/frontend.txt",
	Verdicts:   []string{"live", "free", "unknown"},
	kernelCall: "fcntl",
	kernelFile: func(_ fsx.Dir, path string) bool {
		return kernelFileAt(path, "/var/lib/dpkg/lock", "/var/lib/dpkg/lock-frontend")
	},
}

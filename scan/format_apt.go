package scan

import "github.com/lockctl/lockctl/internal/fsx"

// apt's lock files: the archives and lists directories' lock, taken by
// GetLock (apt-pkg/contrib/fileutl.cc), fcntl(F_SETLK) on the whole file.
var formatApt = FormatSpec{
	Name:       "apt",
	Producer:   "apt",
	Room:       "format_apt.go",
	KnownNames: []string{"lock"},
	Rule:       "apt holds its archives and lists with an fcntl lock on the file while it runs; the file's existence means nothing.",
	Remedy:     "never removed (apt: removing it \"may break your system\"): live while the kernel shows the lock, free when it shows none.",
	Source:     "apt apt-pkg/contrib/fileutl.cc, GetLock",
	Verdicts:   []string{"live", "free"},
	kernelCall: "fcntl",
	kernelFile: func(_ fsx.Dir, path string) bool {
		return kernelFileAt(path, "/var/cache/apt/archives/lock", "/var/lib/apt/lists/lock")
	},
}

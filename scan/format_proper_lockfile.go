package scan

import (
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// ProducerProperLockfile is npm's proper-lockfile: an empty <file>.lock
// directory beside <file>, whose mtime its holder keeps refreshing.
const ProducerProperLockfile = "proper-lockfile"

// proper-lockfile's lock records nothing: it is an empty directory, found
// by *.lock, and its holder proves it lives by refreshing its mtime.
var formatProperLockfile = FormatSpec{
	Name:     "proper-lockfile",
	Formats:  []Format{FormatEmpty},
	Producer: ProducerProperLockfile,
	Room:     "format_proper_lockfile.go",
	Names:    []string{"*.lock"},
	Rule:     "The holder refreshes the directory's mtime every update (5 s by default); another caller takes a lock whose mtime is older than stale (10 s) for abandoned.",
	Remedy:   "a recent mtime is live; an older one is owner-less, never gone (stale is the holder's option, not recorded), and only --legacy-older-than removes it.",
	Source:   "moxystudio/node-proper-lockfile lib/lockfile.js, lock and isLockStale; lib/mtime-precision.js",
	Verdicts: []string{"live", "ownerless"},
	// npm's proper-lockfile locks <file> by mkdir <file>.lock, and by
	// default only a file that exists (it takes its realpath).
	emptyDir: func(d fsx.Dir, name string) bool {
		if base, ok := strings.CutSuffix(name, ".lock"); ok && base != "" {
			if _, err := d.Lstat(base); err == nil {
				return true
			}
		}
		return false
	},
}

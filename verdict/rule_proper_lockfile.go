package verdict

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// The proper-lockfile format's judgement (its unit: scan/format_proper_lockfile.go): its producer's
// rule where it needs the kernel's evidence.
func init() { rule("proper-lockfile", producerRule{noRecord: properLockfileRule}) }

// ProperLockfileFresh is how recently an npm proper-lockfile lock must have
// been refreshed to count as held: proper-lockfile's own default stale
// interval, after which it takes the lock for abandoned (its holder
// refreshes the mtime every stale/2, 5 s by default; lib/lockfile.js,
// lock and isLockStale).
const ProperLockfileFresh = 10 * time.Second

// ProperLockfileAhead is how far ahead of this clock a proper-lockfile
// mtime may be and still read as just refreshed: it rounds the time it
// sets up to the next second on file systems that keep only seconds
// (lib/mtime-precision.js).
const ProperLockfileAhead = 2 * time.Second

// properLockfile judges npm's proper-lockfile lock, an empty <file>.lock
// directory that names no holder. Its holder proves itself alive by
// refreshing the directory's mtime: a recent mtime (or one ahead of this
// clock, which proper-lockfile rounds up to the second on coarse file
// systems) is evidence that it lives. An mtime left alone longer stays
// owner-less, never gone: the stale interval is the holder's option and is
// not stored in the lock, and a holder that is suspended stops refreshing.
func properLockfile(r Result) Result {
	age := time.Since(r.Lock.Info.Mtime)
	what := "an npm proper-lockfile lock (an empty directory beside the file it locks, no holder recorded)"
	if age < -ProperLockfileAhead {
		// Not a rounding: a clock that moved, or a hand-set mtime. It says
		// nothing of when the holder last refreshed it.
		r = r.set(judged{v: Ownerless, reason: fmt.Sprintf("%s, its mtime %s ahead of this clock, so when it was last refreshed cannot be told", what, ageText(-age))})
		r.ownerlessRemedy()
		return r
	}
	if age < ProperLockfileFresh {
		return r.set(judged{v: Live, reason: fmt.Sprintf("%s, refreshed %s ago: its holder refreshes it every few seconds while it runs (proper-lockfile takes it for stale only after %s)", what, ageText(age), ProperLockfileFresh)})
	}
	r = r.set(judged{v: Ownerless, reason: fmt.Sprintf("%s, last refreshed %s ago: a running holder refreshes it every 5 s by default, but the interval is the holder's choice and is not recorded, and a suspended holder stops refreshing", what, ageText(age))})
	r.ownerlessRemedy()
	return r
}

// properLockfileRule judges an empty lock directory by proper-lockfile's
// rule; any other (a record claimed away) is left to the records.
func properLockfileRule(r Result) (Result, bool) {
	if r.Lock.Kind != scan.KindDir || r.Lock.Format != scan.FormatEmpty {
		return r, false
	}
	return properLockfile(r), true
}

package verdict

import (
	"fmt"
	"time"
)

// The ccache format's judgement (its unit: scan/format_ccache.go): its producer's
// rule where it needs the kernel's evidence.
func init() { rule("ccache", producerRule{gone: ccacheQuiet}) }

// CcacheStaleness is how long ccache takes a lock for held after its last
// activity, whatever its holder: k_staleness_limit in util/lockfile.cpp.
const CcacheStaleness = 2 * time.Second

// ccacheQuiet: ccache breaks a lock only once it has been inactive for
// CcacheStaleness (util/lockfile.cpp, do_acquire); until then it waits on
// it, even when its pid is gone. lockctl is never more eager: a gone
// holder's lock taken (by the time its target records, or the link's
// mtime) less than that long ago is unknown for that while, never gone.
func ccacheQuiet(_ *Judge, r Result) Result {
	last := r.Lock.Info.Mtime
	if h := r.Holder; h != nil && h.Since.After(last) {
		last = h.Since
	}
	if age := time.Since(last); age < CcacheStaleness {
		r = r.set(judged{v: Unknown, holder: r.Holder, started: r.Started, reason: fmt.Sprintf("%s, but the lock was taken %s ago, and ccache waits %s after a lock's last activity before it breaks it", r.Reason, ageText(age), CcacheStaleness)})
		r.Remove = nil
	}
	return r
}

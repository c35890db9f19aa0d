package verdict

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// The emacs format's judgement (its unit: scan/format_emacs.go): its producer's
// rule where it needs the kernel's evidence.
func init() { rule("emacs", producerRule{after: emacsBoot}) }

// emacsBoot: Emacs records its own idea of the boot time, and takes a
// running pid whose boot time differs by more than a second for another
// boot's (src/filelock.c, current_lock_owner). Emacs's boot time and the
// kernel's btime come from different sources, so lockctl lets a mismatch
// make a running pid recycled, never gone.
func emacsBoot(j *Judge, h *scan.Holder, jd judged) judged {
	if jd.v != Live || h.Booted.IsZero() || j.Host.BootTime.IsZero() {
		return jd
	}
	if d := h.Booted.Sub(j.Host.BootTime); d > time.Second || d < -time.Second {
		jd.v = Recycled
		jd.reason = fmt.Sprintf("pid %s is running, but Emacs recorded a boot at %s and this machine booted at %s: the pid belongs to another process (Emacs would take the lock)", h.PidText, stamp(h.Booted), stamp(j.Host.BootTime))
	}
	return jd
}

package verdict

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// Reservation judges the reservation h, a record of this host and boot,
// by its deadline alone: Live until then, Gone after, Unknown when the
// clock cannot tell. An adopter asks it once it has claimed the record.
func (j *Judge) Reservation(h *scan.Holder) (Verdict, string) {
	jd := j.reservation(h)
	return jd.v, jd.reason
}

// reservation judges a reservation of this host and boot (lockctl reserve)
// by its deadline, which its writer put on the kernel's monotonic clock:
// held until then, whether or not the reserver still runs, and gone after.
// The grace is the one time lockctl lets decide a lock besides
// --legacy-older-than, and it is written by the lock's owner, never
// guessed. A clock this reader cannot read, or one its time namespace
// shifts differently from the writer's, proves nothing: held.
func (j *Judge) reservation(h *scan.Holder) judged {
	jd := judged{holder: h}
	out := func(v Verdict, format string, args ...any) judged {
		jd.v, jd.reason = v, fmt.Sprintf(format, args...)
		return jd
	}
	by := "pid " + h.PidText
	if h.Command != "" {
		by += ", " + h.Command
	}
	switch {
	case j.Host.Clock == nil:
		return out(Unknown, "reserved for a worker (by %s) until a time on the kernel's monotonic clock, which this reader cannot read", by)
	case j.Host.ClockErr != nil:
		return out(Unknown, "reserved for a worker (by %s) until a time on the kernel's monotonic clock, and this reader's time namespace offset cannot be read (%s): when it ends cannot be told here", by, errText(j.Host.ClockErr))
	case j.Host.ClockOffset != h.TimeNS:
		return out(Unknown, "reserved for a worker (by %s) from a time namespace whose monotonic clock is offset by %s, and this reader's is offset by %s: judge it from the reserver's time namespace", by, h.TimeNS, j.Host.ClockOffset)
	}
	now, err := j.Host.Clock()
	if err != nil {
		return out(Unknown, "reserved for a worker (by %s), and the monotonic clock cannot be read: %s", by, errText(err))
	}
	left := h.Until - (now - j.Host.ClockOffset)
	jd.until = time.Now().Add(left)
	until := jd.until.UTC().Format("15:04:05")
	if left > 0 {
		return out(Live, "reserved for a worker until %s (by %s; %s left): the worker takes it over with 'lockctl adopt --token', the reserver gives it up with 'lockctl release --token'", until, by, left.Round(100*time.Millisecond))
	}
	return proved(jd, fmt.Sprintf("the reservation (by %s) ended at %s, %s ago, with no worker adopting it", by, until, (-left).Round(100*time.Millisecond)),
		Fact{Expired, "the kernel's CLOCK_MONOTONIC, in a time namespace with the reserver's offset", ""})
}

// Package verdict judges each lock that package scan found: is its holder
// live, provably gone, or something that cannot be decided here?
//
// The rule that shapes every branch: a doubt is never "gone". EPERM, an
// unreadable /proc, a pid out of range, a record from another host or pid
// namespace, a missing or malformed record: each lands in live, foreign,
// unknown or ownerless, never in gone. Age is reported, never judged.
//
// The kernel sits behind the Probe interface so the tables here can be
// tested with a fake; internal/kernel's KernelProbe is the real one.
package verdict

import (
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// Verdict is the judgement of one lock.
type Verdict string

// The verdicts. See docs/verdicts.md.
const (
	Live      Verdict = "live"
	Gone      Verdict = "gone"
	Recycled  Verdict = "recycled"
	Ownerless Verdict = "ownerless"
	Foreign   Verdict = "foreign"
	Claimed   Verdict = "claimed"
	Unknown   Verdict = "unknown"
	// Free is a kernel-lock file that no process holds a lock on: nothing
	// waits on it, and nothing is to be removed.
	Free Verdict = "free"
	// Idle is an empty lock file whose producer is unknown, that no
	// process holds a kernel lock on or has open, by a complete look: a
	// flock(1) file nobody holds now, or an existence lock whose owner
	// wrote nothing. Its bytes cannot say which, so nothing is proposed,
	// nothing removes it, and it is outside the default fail set.
	Idle Verdict = "idle"
)

// All lists every verdict, most urgent first: the order reports use.
var All = []Verdict{Gone, Claimed, Recycled, Ownerless, Unknown, Foreign, Live, Idle, Free}

// Parse returns the verdict named s.
func Parse(s string) (Verdict, bool) {
	for _, v := range All {
		if string(v) == s {
			return v, true
		}
	}
	return "", false
}

// heldness orders verdicts from "certainly free" to "certainly held". When
// several records speak for one lock, the most held one wins.
var heldness = map[Verdict]int{Free: -1, Gone: 0, Idle: 1, Ownerless: 1, Claimed: 2, Recycled: 3, Foreign: 4, Unknown: 5, Live: 6}

// Op is one kind of removal step.
type Op string

// The removal steps a remedy is made of.
const (
	OpRemove  Op = "rm"      // remove the file Path
	OpRmdir   Op = "rmdir"   // remove the empty directory Path
	OpRestore Op = "restore" // hard-link Path back to To (never replacing), then remove Path
)

// Step is one step of a remedy, in order.
type Step struct {
	Op   Op
	Path string
	To   string
}

// Result is the judgement of one lock.
type Result struct {
	Lock    *scan.Lock
	Verdict Verdict
	// Reason is the evidence in one sentence.
	Reason string
	// Holder is the record the verdict is about (for a claimed lock, the
	// record the claim holds), or nil.
	Holder *scan.Holder
	// Started is when the holder's process started, where known (evidence).
	Started time.Time
	// Modified is the lock's modification time (for a lock of which only
	// side files remain, the oldest of theirs).
	Modified time.Time
	// Remove is what to remove, in order; empty when nothing is due.
	Remove []Step
	// Caveat qualifies Remove (owner-less locks).
	Caveat string
	// Notes are further evidence worth an operator's eye.
	Notes []string
	// Seen says how far kernel evidence was looked for (owner-less locks).
	Seen Seen
	// Kernel are the holders the kernel's own tables show (an advisory lock
	// on the lock, or for an owner-less lock the file held open), first the
	// one the reason names; Waiters, the requests blocked behind such a
	// lock, where the kernel lists them.
	Kernel  []KernelHolder
	Waiters []KernelHolder
	// Detail describes a live holder's process, for the report (filled by
	// doctor.Run, not by Judge).
	Detail *ProcDetail
	// ReservedUntil is when a reservation ends (a reservation's Holder),
	// in wall time as estimated from the monotonic clock; zero otherwise.
	ReservedUntil time.Time
	// Facts are the premises a gone verdict rests on, each with its source
	// (premise.go); for a verdict that is not gone, those that were found
	// before a doubt, or nothing.
	Facts []Fact
	// Debris is what to remove of the unpublished lock builds left beside
	// this lock by acquirers that are gone (<lock>.new.<token>.<pid>): inert,
	// whatever the lock's own verdict.
	Debris []Step
	// Temps are its producer's temporary files found with it
	// (scan.Lock.Temps), each judged; they never change the verdict.
	Temps []TempState
	// Remote is the host that judged this lock, where it was not this one
	// (doctor --via asked the host its record names); "" otherwise.
	Remote string
}

// Judge judges locks against one host and one probe.
type Judge struct {
	Host  Host
	Probe Probe
	// Evidence, when set, is asked who holds a lock that has no usable
	// owner record.
	Evidence Evidence
	// FileLocks, when set, is asked about the advisory locks on one file
	// where the kernel's lock table (Evidence's) is not the whole
	// machine's; without it, such a table leaves a gone holder unknown.
	FileLocks FileLockTest
}

// BootMargin is how long before this boot a record must have last changed
// to be taken as written in an earlier boot. Clocks are often set after
// boot; the margin keeps a record written in this boot, under a clock not
// yet set, from reading as older.
const BootMargin = 10 * time.Minute

// RecycleMargin is how much later than its record a process must have
// started before it is called another process. Start times are converted to
// wall time through btime, which has one-second resolution and moves when the
// clock steps: the margin keeps that noise from ever reading as recycled.
const RecycleMargin = 2 * time.Second

// EmptyFileReadings is said of every empty lock file of unknown kind that
// no process holds: the two programs that leave one behind mean opposite
// things by it.
const EmptyFileReadings = "an empty file can be a kernel lock (flock(1) leaves one behind, and then it is free: 'lockctl run --kind flock' takes it) or an existence lock whose live holder keeps no file open (then removing it breaks that lock); its bytes cannot tell which"

// IdleReason is the reason of every idle verdict: both readings, and why
// neither is chosen.
const IdleReason = "an empty file of no known producer that no process holds a lock on or has open: either a kernel lock nobody holds now (flock(1) leaves one behind; 'lockctl run --kind flock' takes it) or an existence lock whose owner wrote nothing, which removing would break; its bytes cannot tell which, so lockctl proposes nothing"

// OwnerlessCaveat goes with every remedy for an owner-less lock.
const OwnerlessCaveat = "a lock taken a moment ago looks the same: remove it only when the program that uses it is known not to be running"

type judged struct {
	v       Verdict
	reason  string
	holder  *scan.Holder
	started time.Time
	until   time.Time // a reservation's end (Result.ReservedUntil)
	facts   []Fact    // the premises of a gone verdict (proved)
}

func (a *judged) moreHeld(b judged) bool { return a == nil || heldness[b.v] > heldness[a.v] }

// Judge returns the verdict on l. It reads the kernel through the probe and
// the evidence, and nothing else; it never touches the disk.
func (j *Judge) Judge(l *scan.Lock) Result {
	r := j.judge(l)
	switch r.Verdict {
	case Ownerless:
		r = j.kernelHolders(r)
	case Gone:
		r = j.producerGone(r)
		r = j.lockedAnyway(r)
	}
	r.Debris = j.debris(l)
	r.Notes = append(r.Notes, notBuilds(l)...)
	r.Temps = j.temps(l)
	if l.Kind == scan.KindMissing && len(l.Claims) == 0 && len(r.Temps) > 0 {
		r = j.onlyTemps(r)
	}
	if n := len(r.Debris) / 2; n > 0 && l.Kind != scan.KindMissing {
		r.Notes = append(r.Notes, fmt.Sprintf("%d unpublished lock builds beside it were left by acquirers that are gone (lockctl doctor --fix removes them)", n))
	}
	return r
}

func (j *Judge) judge(l *scan.Lock) Result {
	r := Result{Lock: l, Modified: l.Info.Mtime}
	switch {
	case l.Err != nil:
		return r.set(judged{v: Unknown, reason: "cannot read the lock: " + errText(l.Err)})
	case l.Kind == scan.KindSymlink && l.Producer == "":
		return r.set(judged{v: Unknown, reason: "the lock is a symbolic link, and lockctl never follows one"})
	case l.Kind == scan.KindOther:
		return r.set(judged{v: Unknown, reason: fmt.Sprintf("the lock is a %s, not a file or directory lockctl can read", ModeWord(l.Info.Mode))})
	case l.Kind == scan.KindMissing:
		return j.claimed(r)
	case l.KernelLock != "" && l.Kind == scan.KindFile:
		return j.kernelLock(r)
	}
	if res, decided := j.producerLock(r); decided {
		return res // git's lock records no holder: git's rule decides
	}

	var best *judged
	for i := range l.Holders {
		if jd := j.record(l, &l.Holders[i]); best.moreHeld(jd) {
			best = &jd
		}
	}
	if best == nil {
		return j.noRecord(r)
	}
	if best.v != Live {
		// Writer evidence outweighs a record that is gone or unusable: a
		// running writer still works under the lock.
		if jd, held := j.writers(l); held && best.moreHeld(jd) {
			best = &jd
		}
	}
	r = r.set(*best)
	for _, c := range l.Claims {
		if c.Kind == scan.ClaimBuild {
			continue // waiting acquirers, or debris (summarised by Judge)
		}
		r.Notes = append(r.Notes, j.sideNote(l, c))
	}
	switch r.Verdict {
	case Gone:
		r.Remove = removeLock(l)
		if why := scan.InPlace(l); why != "" {
			r.Remove = nil
			r.Notes = append(r.Notes, why)
		}
		if r.Holder != nil && r.Holder.Break == "no" {
			r.Notes = append(r.Notes, "the holder asked never to be broken automatically (break no): lockctl doctor --fix leaves it alone")
		}
	case Ownerless:
		r.ownerlessRemedy()
	}
	if len(l.Others) > 0 && len(r.Remove) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("the lock directory also holds %d other entries (%s), so rmdir will fail until they are dealt with", len(l.Others), strings.Join(l.Others, ", ")))
	}
	return r
}

func (r Result) set(jd judged) Result {
	r.Verdict, r.Reason, r.Holder, r.Started, r.ReservedUntil = jd.v, jd.reason, jd.holder, jd.started, jd.until
	r.Facts = jd.facts
	return r
}

// ModeWord names the type of a special file (a FIFO, socket or device),
// for a message about what stands where a lock was looked for.
func ModeWord(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func errText(err error) string {
	if err == nil {
		return "no reason given"
	}
	return err.Error()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// quoteName keeps a file name on one line and free of control characters
// when it is spliced into a reason.
func quoteName(s string) string {
	for _, c := range s {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == '\uFFFD' {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}

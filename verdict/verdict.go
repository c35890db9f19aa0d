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
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
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
)

// All lists every verdict, most urgent first: the order reports use.
var All = []Verdict{Gone, Claimed, Recycled, Ownerless, Unknown, Foreign, Live}

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
var heldness = map[Verdict]int{Gone: 0, Ownerless: 1, Claimed: 2, Recycled: 3, Foreign: 4, Unknown: 5, Live: 6}

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
	// Debris is what to remove of the unpublished lock builds left beside
	// this lock by acquirers that are gone (<lock>.new.<token>.<pid>): inert,
	// whatever the lock's own verdict.
	Debris []Step
}

// Judge judges locks against one host and one probe.
type Judge struct {
	Host  Host
	Probe Probe
	// Evidence, when set, is asked who holds a lock that has no usable
	// owner record.
	Evidence Evidence
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

// OwnerlessCaveat goes with every remedy for an owner-less lock.
const OwnerlessCaveat = "a lock taken a moment ago looks the same: remove it only when the program that uses it is known not to be running"

type judged struct {
	v       Verdict
	reason  string
	holder  *scan.Holder
	started time.Time
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
		r = j.lockedAnyway(r)
	}
	r.Debris = j.debris(l)
	if n := len(r.Debris) / 2; n > 0 && l.Kind != scan.KindMissing {
		r.Notes = append(r.Notes, fmt.Sprintf("%d unpublished lock builds beside it were left by acquirers that are gone (lockctl doctor --fix removes them)", n))
	}
	return r
}

// debris lists the steps that remove the abandoned builds beside l: an
// unpublished build can only ever be published by the process that made
// it, so once that process is gone it is inert.
func (j *Judge) debris(l *scan.Lock) []Step {
	var steps []Step
	for _, c := range l.Claims {
		// The build directory is the side file itself; its record, read or
		// not (past the read limit), is not needed: the name says its maker.
		sub, _, _ := strings.Cut(c.Record.File, "/")
		if c.Kind != scan.ClaimBuild || !c.Maker {
			continue
		}
		if p := j.probeSide(l, c); p.State == StateAbsent || p.State == StateZombie {
			steps = append(steps, Step{Op: OpRemove, Path: filepath.Join(l.Dir, sub, "holder")}, Step{Op: OpRmdir, Path: filepath.Join(l.Dir, sub)})
		}
	}
	return steps
}

// kernelHolders asks the kernel who holds an owner-less lock: a live
// process with an advisory lock on it, or with it open, holds it.
func (j *Judge) kernelHolders(r Result) Result {
	l := r.Lock
	if j.Evidence == nil || l.Kind == scan.KindMissing {
		return r
	}
	files := []fsx.Stat{l.Info}
	for _, h := range l.Holders {
		// A lock file is its own record: ask about each inode once.
		if h.Info.Ino != 0 && !h.Info.SameFile(l.Info) {
			files = append(files, h.Info)
		}
	}
	var found []KernelHolder
	complete := true
	for _, f := range files {
		hs, c := j.Evidence.Holders(f.Dev, f.Ino)
		found = append(found, hs...)
		complete = complete && c
	}
	if len(found) == 0 {
		r.Seen = SeenComplete
		if !complete {
			r.Seen = SeenPartial
			r.Notes = append(r.Notes, "no process was seen holding it, but not every process's open files could be read (run as root with CAP_SYS_PTRACE to be sure)")
		}
		return r
	}
	h := found[0]
	how := h.How + " held"
	if h.How == "open" {
		how = "held open"
	}
	r.Verdict, r.Remove, r.Caveat = Live, nil, ""
	r.Reason = fmt.Sprintf("no owner record (%s); %s by pid %d (%s)", r.Reason, how, h.Pid, h.Comm)
	for _, o := range found[1:] {
		how := o.How + " held"
		if o.How == "open" {
			how = "held open"
		}
		r.Notes = append(r.Notes, fmt.Sprintf("also %s by pid %d (%s)", how, o.Pid, o.Comm))
	}
	return r
}

// lockedAnyway keeps a gone lock held when a live process has an advisory
// lock (flock, POSIX or OFD) on it: tools that flock their pid file, or an
// inherited lock, say the lock is in use whatever pid the record names.
// Files merely held open do not count here: a reader, another doctor or a
// waiting acquirer opens a lock without holding it.
func (j *Judge) lockedAnyway(r Result) Result {
	l := r.Lock
	if l.Kind == scan.KindMissing {
		return r
	}
	if by, ok := j.lockedBy(l.Info); ok {
		r.Verdict, r.Remove, r.Caveat = Live, nil, ""
		r.Reason = fmt.Sprintf("%s, but %s: the lock is in use", r.Reason, by)
	}
	return r
}

// lockedBy says who the kernel's lock table shows holding an advisory lock
// on the file info describes, if anyone.
func (j *Judge) lockedBy(info fsx.Stat) (string, bool) {
	t, ok := j.Evidence.(LockTable)
	if !ok || info.Ino == 0 {
		return "", false
	}
	hs := t.Locks(info.Dev, info.Ino)
	if len(hs) == 0 {
		return "", false
	}
	h := hs[0]
	if h.Pid == 0 {
		// Its taker has exited: name who has it open, which costs a scan of
		// every process's files, asked only in this rare case.
		all, _ := j.Evidence.Holders(info.Dev, info.Ino)
		for _, o := range all {
			if o.How != "open" && o.Pid > 0 {
				h = o
				break
			}
		}
	}
	if h.Pid > 0 {
		return fmt.Sprintf("%s held by pid %d (%s)", h.How, h.Pid, h.Comm), true
	}
	return fmt.Sprintf("the kernel's lock table still holds it (%s, taken by a process that has exited: an inherited descriptor or an OFD lock keeps it)", h.How), true
}

func (j *Judge) judge(l *scan.Lock) Result {
	r := Result{Lock: l, Modified: l.Info.Mtime}
	switch {
	case l.Err != nil:
		return r.set(judged{v: Unknown, reason: "cannot read the lock: " + errText(l.Err)})
	case l.Kind == scan.KindSymlink:
		return r.set(judged{v: Unknown, reason: "the lock is a symbolic link, and lockctl never follows one"})
	case l.Kind == scan.KindOther:
		return r.set(judged{v: Unknown, reason: fmt.Sprintf("the lock is a %s, not a file or directory lockctl can read", modeWord(l.Info.Mode))})
	case l.Kind == scan.KindMissing:
		return j.claimed(r)
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
	r.Verdict, r.Reason, r.Holder, r.Started = jd.v, jd.reason, jd.holder, jd.started
	return r
}

// record judges one holder record of l.
func (j *Judge) record(l *scan.Lock, rec *scan.Record) judged {
	var fe *scan.FormatError
	switch {
	case errors.As(rec.Err, &fe):
		return judged{v: Ownerless, reason: fmt.Sprintf("the holder record %s is malformed: %s", quoteName(rec.File), fe.Reason)}
	case rec.Err != nil:
		return judged{v: Unknown, reason: fmt.Sprintf("cannot read the holder record %s: %s", quoteName(rec.File), errText(rec.Err))}
	case rec.Holder == nil && l.Format == scan.FormatNoPid:
		return judged{v: Ownerless, reason: "the lock file says 0: it was written without an owner's pid"}
	case rec.Holder == nil:
		return judged{v: Ownerless, reason: "the lock file is empty: no owner was recorded"}
	}
	// Generation A writes its holder beside the directory, so a holder left
	// behind by an earlier lock can sit beside a directory made since by
	// someone else (who has not written their own holder yet, or never
	// will). A record older than the directory it sits beside does not
	// describe that directory's owner.
	if l.Format == scan.FormatRegistryA && rec.Info.Mtime.Before(l.Info.Created()) {
		return judged{v: Ownerless, holder: rec.Holder, reason: fmt.Sprintf(
			"the holder record %s (written %s) is older than the lock directory (made %s): it was left by an earlier holder, and this directory's owner is unknown",
			rec.File, stamp(rec.Info.Mtime), stamp(l.Info.Created()))}
	}
	return j.holder(rec.Holder, l.Format, rec.Info, l.FS)
}

// holder judges what one record says, given when the record was written.
// The order is the argument: where a record was written decides whether
// this host may judge it at all, before any pid is looked at, because a pid
// from another host or namespace names some unrelated process here.
func (j *Judge) holder(h *scan.Holder, format scan.Format, info fsx.Stat, fs fsx.FS) judged {
	jd := judged{holder: h}
	out := func(v Verdict, format string, args ...any) judged {
		jd.v, jd.reason = v, fmt.Sprintf(format, args...)
		return jd
	}
	written := info.Mtime
	if h.Scope != "" {
		if j.Host.Scope == "" {
			if errors.Is(j.Host.ScopeErr, ErrScopeUnsupported) {
				// No fault to mend here: this platform cannot say whether
				// the record is its own, so it is treated as another's.
				return out(Foreign, "the record carries a scope, and lockctl cannot compute this machine's (%v), so it cannot tell whether the record was written here: check pid %s on host %s by hand", j.Host.ScopeErr, h.PidText, h.Host)
			}
			return out(Unknown, "the record carries a scope, but this host's cannot be computed (%v)", j.Host.ScopeErr)
		}
		if h.Scope != j.Host.Scope {
			// The scope folds machine, boot and namespace into one digest:
			// a mismatch alone cannot say which. A record of this host's,
			// on a local disk, written before this boot, can only name a
			// process that ended with an earlier boot. (Written: its
			// modification time, which a restore with preserved times
			// also carries; see docs/verdicts.md.)
			if j.sameHost(h.Host) && !fs.Remote && !j.Host.BootTime.IsZero() &&
				!info.Mtime.IsZero() && info.Mtime.Before(j.Host.BootTime.Add(-BootMargin)) {
				// The date says an earlier boot, but a clock that was wrong
				// when the record was written says the same: the kernel
				// must also know no pid namespace of this boot with it.
				w, ok := j.Evidence.(ScopeWitness)
				if !ok {
					return out(Foreign, "its scope is not this machine's, boot's and pid namespace's, and the record is dated %s, before this host booted, but whether a pid namespace of this boot wrote it cannot be checked here: judge it where it was written (host %s)", stamp(info.Mtime), h.Host)
				}
				switch used, complete := w.ScopeInUse(h.Scope, j.Host); {
				case used:
					return out(Foreign, "its scope is that of a pid namespace of this boot, though the record is dated %s, before this host booted (a clock set late?): judge it inside that namespace", stamp(info.Mtime))
				case !complete:
					return out(Foreign, "its scope is not this machine's, boot's and pid namespace's, and the record is dated %s, before this host booted, but not every pid namespace of this boot could be seen to rule it out (run as root with CAP_SYS_PTRACE): judge it where it was written (host %s)", stamp(info.Mtime), h.Host)
				}
				return out(Gone, "its scope is not this boot's, and the record was written at %s, before this host booted at %s: its holder ended with an earlier boot", stamp(info.Mtime), stamp(j.Host.BootTime))
			}
			return out(Foreign, "its scope is not this machine's, boot's and pid namespace's: judge it where it was written (host %s)", h.Host)
		}
	}
	// On a local file system a record of this boot was written by this
	// kernel, whatever host name it gives: a UTS namespace (a container, a
	// sandbox) renames the host for its own processes only. On a network
	// file system another machine may share the boot id (VMs cloned from
	// one snapshot), so there the name is checked too.
	thisKernel := h.BootID != "" && h.BootID == j.Host.BootID && !fs.Remote
	if h.Host != "" && !thisKernel {
		if j.Host.Name == "" {
			return out(Unknown, "the record names host %s, and this host's name cannot be read", h.Host)
		}
		if !j.sameHost(h.Host) {
			return out(Foreign, "the record names host %s, and this is %s: run lockctl doctor on %s", h.Host, j.Host.Name, h.Host)
		}
	}
	if h.BootID != "" {
		if j.Host.BootID == "" {
			return out(Unknown, "the record names boot %s, and this boot's id cannot be read", h.BootID)
		}
		if h.BootID != j.Host.BootID {
			if fs.Remote {
				return out(Foreign, "the record is from boot %s of a host named %s, on a network file system (%s) that another machine of that name may share: judge it there", h.BootID, h.Host, fs.Name)
			}
			return out(Gone, "the record is from boot %s, and this is boot %s: its holder ended with that boot", h.BootID, j.Host.BootID)
		}
	}
	if h.Host == "" && fs.Remote {
		return out(Foreign, "the record is a bare pid on a network file system (%s), where it may belong to another host: judge it on the host that wrote it", fs.Name)
	}
	if h.PidNS != "" && h.PidNS != j.Host.PidNS {
		if !thisKernel {
			return out(Foreign, "the record names pid namespace %s, and this is %s: judge it inside that namespace", h.PidNS, j.Host.PidNS)
		}
		// A namespace no process is in has ended, and every process of it
		// with it: once its init exits, nothing can enter it again.
		switch used, err := j.nsInUse(h.PidNS); {
		case err != nil:
			return out(Foreign, "the record names pid namespace %s, and this is %s: judge it inside that namespace (whether it has ended cannot be told here: %v)", h.PidNS, j.Host.PidNS, err)
		case used:
			return out(Foreign, "the record names pid namespace %s, and this is %s: judge it inside that namespace", h.PidNS, j.Host.PidNS)
		}
		return out(Gone, "the record names pid namespace %s, and no process on this machine is in it any more: that namespace has ended, and pid %s with it", h.PidNS, h.PidText)
	}
	// A pid of a record that names its namespace (lockctl's own, a
	// generation B scope) is of this namespace by now; any other could have
	// been written in any namespace.
	placed := h.PidNS != "" || h.Scope != ""
	jd = j.process(h, h.PidText, h.Pid, h.Start, h.HasStart, placed, format, written)
	// Processes recorded together with the holder hold the lock with it.
	for _, a := range h.Also {
		if jd.v == Live {
			break
		}
		if also := j.process(h, strconv.FormatInt(a.Pid, 10), a.Pid, a.Start, true, placed, format, written); jd.moreHeld(also) {
			also.reason = "the holder is gone, but " + also.reason + " (recorded with it)"
			jd = also
		}
	}
	return jd
}

// process judges one recorded process of record h: pid (as written, pidText),
// with its start time when the record fences it. placed says the pid is of
// this pid namespace; otherwise it is gone only if no namespace has it.
func (j *Judge) process(h *scan.Holder, pidText string, pid64 int64, start uint64, fenced, placed bool, format scan.Format, written time.Time) judged {
	jd := judged{holder: h}
	out := func(v Verdict, format string, args ...any) judged {
		jd.v, jd.reason = v, fmt.Sprintf(format, args...)
		return jd
	}
	if pid64 <= 0 || pid64 > j.Host.PidMax {
		return out(Unknown, "pid %s is out of range (1 to %d), so it proves nothing", pidText, j.Host.PidMax)
	}
	pid := int(pid64)
	p := j.Probe.Probe(pid)
	if p.HasStart {
		jd.started = j.Host.Started(p.Start)
	}
	switch p.State {
	case StateAbsent, StateZombie:
		if format == scan.FormatRegistryB && h.Scope == "" {
			// The writer could not tell where it was: a pid that is absent
			// (or a zombie) here may name a process in another namespace.
			return out(Unknown, "pid %d is not running here, but the record has no scope, so it may have been written in another pid namespace", pid)
		}
		if !placed {
			if why := j.elsewhere(pid); why != "" {
				here := "is not running in this pid namespace"
				if p.State == StateZombie {
					here = fmt.Sprintf("is a zombie (%s) in this pid namespace", p.Comm)
				}
				return out(Unknown, "pid %d %s, but the record does not say which pid namespace wrote it, and %s", pid, here, why)
			}
		}
		if p.State == StateZombie {
			return out(Gone, "pid %d is a zombie (%s): it has exited and can never release the lock", pid, p.Comm)
		}
		return out(Gone, "pid %d is not running", pid)
	case StateRunning:
	default:
		return out(Unknown, "cannot tell whether pid %d is running: %s", pid, errText(p.Err))
	}
	if fenced {
		if !p.HasStart {
			return out(Unknown, "pid %d is running, but its start time cannot be read (%s)", pid, errText(p.Err))
		}
		if p.Start != start {
			return out(Gone, "pid %d is running but its start time is %d, not the recorded %d: it is another process", pid, p.Start, start)
		}
		return out(Live, "pid %d (%s) is running and its start time matches the record", pid, p.Comm)
	}
	// No start-time fence: the pid may have been reused. A process that
	// started after the record was written cannot be the one that wrote it.
	since := written
	if !h.Since.IsZero() && (since.IsZero() || h.Since.Before(since)) {
		since = h.Since
	}
	if !jd.started.IsZero() && !since.IsZero() && jd.started.After(since.Add(RecycleMargin)) {
		return out(Recycled, "pid %d (%s) started at %s, after this record was written at %s: the pid was reused", pid, p.Comm, stamp(jd.started), stamp(since))
	}
	who := fmt.Sprintf("pid %d", pid)
	if p.Comm != "" {
		who += " (" + p.Comm + ")"
	}
	switch {
	case p.Denied:
		return out(Live, "%s is running as another user", who)
	case !p.HasStart:
		return out(Live, "%s is running (its start time cannot be read: %s)", who, errText(p.Err))
	}
	return out(Live, "%s is running", who)
}

func (j *Judge) sameHost(h string) bool { return h != "" && strings.EqualFold(h, j.Host.Name) }

// writers checks generation B writer evidence: a holder that is gone while
// one of its writers runs still holds the lock.
func (j *Judge) writers(l *scan.Lock) (judged, bool) {
	// Writers run in their holder's namespace, which only a record whose
	// scope is this host's names.
	ns := ""
	for _, r := range l.Holders {
		if r.Holder != nil && r.Holder.Scope != "" && r.Holder.Scope == j.Host.Scope {
			ns = j.Host.PidNS
		}
	}
	for _, w := range l.Writers {
		if w.Pid <= 0 || w.Pid > j.Host.PidMax {
			return judged{v: Unknown, reason: fmt.Sprintf("the writer evidence %s names no usable pid", w.Name)}, true
		}
		switch p := j.probeIn(w.Pid, ns, l.FS.Remote); p.State {
		case StateAbsent, StateZombie:
		case StateRunning:
			return judged{v: Live, reason: fmt.Sprintf("the holder is gone, but its writer pid %d (%s) is still running", w.Pid, p.Comm)}, true
		default:
			return judged{v: Unknown, reason: fmt.Sprintf("cannot tell whether writer pid %d is running: %s", w.Pid, errText(p.Err))}, true
		}
	}
	if len(l.Pending) > 0 {
		return judged{v: Unknown, reason: fmt.Sprintf("the holder is gone, but %s announces a writer that cannot be identified", l.Pending[0])}, true
	}
	return judged{}, false
}

// noRecord judges a lock that exists but has no holder record at all.
func (j *Judge) noRecord(r Result) Result {
	l := r.Lock
	if jd, held := j.writers(l); held {
		return r.set(jd)
	}
	for _, c := range l.Claims {
		if c.Kind != scan.ClaimBreak && c.Kind != scan.ClaimRelease {
			continue
		}
		if unreadable(c.Record) {
			// A claim that could not even be examined may be this lock's.
			return r.set(judged{v: Unknown, reason: fmt.Sprintf("side file %s could not be read (%s), so whether this lock is being broken or released cannot be told", quoteName(c.Record.File), errText(c.Record.Err))})
		}
		if belongs(l, c) {
			return j.claimed(r)
		}
		r.Notes = append(r.Notes, fmt.Sprintf("%s is older than the lock directory, so it belongs to an earlier lock, not this one", j.sideNote(l, c)))
	}
	for _, c := range l.Claims {
		if c.Kind != scan.ClaimPublish {
			continue
		}
		switch p := j.probeSide(l, c); p.State {
		case StateRunning:
			return r.set(judged{v: Live, holder: c.Record.Holder, reason: fmt.Sprintf("no holder record yet, but pid %d is publishing one (%s)", c.By, c.Record.File)})
		case StateUnknown:
			return r.set(judged{v: Unknown, reason: fmt.Sprintf("no holder record, and cannot tell whether the publisher of %s is running: %s", c.Record.File, errText(p.Err))})
		}
		r.Notes = append(r.Notes, j.sideNote(l, c))
	}
	switch {
	case l.Kind == scan.KindDir && l.Format == scan.FormatEmpty:
		r = r.set(judged{v: Ownerless, reason: "the lock directory is empty and there is no holder file beside it"})
	case l.Kind == scan.KindDir && l.Format == scan.FormatRegistryB:
		r = r.set(judged{v: Ownerless, reason: "there is no holder record inside the lock directory, only writer evidence of holders that are gone"})
	case l.Kind == scan.KindDir:
		r = r.set(judged{v: Ownerless, reason: fmt.Sprintf("the lock directory holds no holder record (it holds %d other entries)", len(l.Others))})
	default:
		r = r.set(judged{v: Ownerless, reason: "there is no owner record"})
	}
	r.ownerlessRemedy()
	return r
}

// ownerlessRemedy proposes removing an owner-less lock, with the caveat,
// only where the lock holds nothing but what lockctl can account for.
func (r *Result) ownerlessRemedy() {
	l := r.Lock
	if len(l.Others) > 0 {
		r.Notes = append(r.Notes, "the directory holds entries lockctl does not recognise; inspect it by hand")
		return
	}
	r.Remove = removeLock(l)
	r.Caveat = OwnerlessCaveat
}

// removeLock lists the steps that remove l and its holder records. For
// generation A the holder goes first: while the directory stands nobody can
// take the lock, so removing the holder first cannot touch a new owner's
// record, and the directory goes last.
func removeLock(l *scan.Lock) []Step {
	var steps []Step
	switch l.Kind {
	case scan.KindFile:
		return []Step{{Op: OpRemove, Path: l.Path}}
	case scan.KindDir:
		for _, h := range l.Holders {
			steps = append(steps, Step{Op: OpRemove, Path: filepath.Join(l.Dir, h.File)})
		}
		for _, w := range l.Writers {
			steps = append(steps, Step{Op: OpRemove, Path: filepath.Join(l.Path, w.Name)})
		}
		for _, p := range l.Pending {
			steps = append(steps, Step{Op: OpRemove, Path: filepath.Join(l.Path, p)})
		}
		return append(steps, Step{Op: OpRmdir, Path: l.Path})
	}
	return nil
}

// claimed judges a lock with no holder but with claims or staging beside it:
// a break or release under way, or abandoned. It also judges side files
// whose lock no longer exists.
func (j *Judge) claimed(r Result) Result {
	l := r.Lock
	if l.Kind == scan.KindMissing {
		builds, waiting := 0, 0
		for _, c := range l.Claims {
			if c.Kind == scan.ClaimBuild {
				builds++
				if p := j.probeSide(l, c); p.State == StateRunning || p.State == StateUnknown {
					waiting++
				}
			}
		}
		if builds == len(l.Claims) {
			// No lock, only locks being built: by acquirers waiting for it,
			// or debris of ones that are gone (Result.Debris).
			r.Verdict = Claimed
			r.Reason = fmt.Sprintf("no lock, only %d unpublished %s: %d by acquirers still running, %d abandoned", builds, plural(builds, "build", "builds"), waiting, builds-waiting)
			for _, c := range l.Claims {
				if r.Modified.IsZero() || c.Record.Info.Mtime.Before(r.Modified) {
					r.Modified = c.Record.Info.Mtime
				}
			}
			return r
		}
	}
	var claims []scan.Claim
	for _, c := range l.Claims {
		if l.Kind != scan.KindMissing && (c.Kind != scan.ClaimBreak && c.Kind != scan.ClaimRelease || !belongs(l, c)) {
			continue
		}
		claims = append(claims, c)
		if r.Modified.IsZero() || c.Record.Info.Mtime.Before(r.Modified) {
			r.Modified = c.Record.Info.Mtime
		}
	}
	r.Verdict = Claimed
	if len(claims) != 1 {
		return j.claimedMany(r, claims)
	}
	c := claims[0]
	by := j.probeSide(l, c)
	var rec judged
	switch {
	case c.Record.Err != nil:
		rec = j.record(l, &c.Record)
	default:
		rec = j.claimedRecord(l, c)
	}
	r.Holder = c.Record.Holder
	r.Started = rec.started
	what := map[scan.ClaimKind]string{scan.ClaimBreak: "a break", scan.ClaimRelease: "a release", scan.ClaimPublish: "a publish", scan.ClaimHolder: "a release", scan.ClaimBuild: "an acquire"}[c.Kind]
	state := fmt.Sprintf("%s of %s by %s", what, quoteName(c.Record.File), byWord(c.By, by))
	record := fmt.Sprintf("the record it holds is %s (%s)", rec.v, rec.reason)
	missing := ""
	if l.Kind == scan.KindMissing {
		missing = "the lock itself is gone; "
	}
	claimPath := filepath.Join(l.Dir, c.Record.File)
	switch by.State {
	case StateRunning, StateUnknown:
		r.Reason = fmt.Sprintf("%s%s is under way or its maker cannot be checked; %s", missing, state, record)
		return r
	}
	r.Reason = fmt.Sprintf("%s%s was abandoned; %s", missing, state, record)
	// An unpublished build whose maker is gone is inert, whatever the
	// record it holds says. (An abandoned release is not: its holder, if
	// alive, never learnt that it released, and still holds the lock.)
	intent := c.Maker && c.Kind == scan.ClaimBuild
	// A release that got as far as removing the lock is complete but for
	// its claim: with no lock left, removing the claim takes nothing.
	intent = intent || c.Maker && c.Kind == scan.ClaimRelease && l.Kind == scan.KindMissing
	switch {
	case rec.v == Gone || intent:
		if l.Kind == scan.KindDir && c.Kind != scan.ClaimPublish && c.Kind != scan.ClaimBuild {
			r.Remove = append(r.Remove, Step{Op: OpRmdir, Path: l.Path})
		}
		r.Remove = append(r.Remove, Step{Op: OpRemove, Path: claimPath})
		if sub := filepath.Dir(c.Record.File); sub != "." {
			// A record that was never published, in the directory it
			// was built in (<lock>.pub.<token>/holder).
			r.Remove = append(r.Remove, Step{Op: OpRmdir, Path: filepath.Join(l.Dir, sub)})
		}
	case rec.v == Live && (c.Kind == scan.ClaimBreak || c.Kind == scan.ClaimRelease && c.Maker):
		// A break, or a release by a releaser named apart from the holder,
		// abandoned with the holder alive: the record goes back, and the
		// holder holds its lock again.
		if to := restoreTarget(l, c); to != "" {
			r.Remove = []Step{{Op: OpRestore, Path: claimPath, To: to}}
		} else {
			r.Reason += "; it cannot be put back because the lock is gone: its holder may believe it still holds the lock"
		}
	case rec.v == Live && l.Kind == scan.KindMissing:
		r.Reason += "; the lock was removed while its holder runs, so that holder may believe it still holds the lock"
	}
	return r
}

// claimedMany judges a lock with several claims or staging files and no
// holder (two releases or breaks that both died, say). When every maker is
// gone and every record claimed is gone too, nothing is left to protect:
// the lock and all the side files can go. Otherwise it is left to a person,
// saying why.
func (j *Judge) claimedMany(r Result, claims []scan.Claim) Result {
	l := r.Lock
	var parts []string
	done := len(claims) > 0
	var steps []Step
	for _, c := range claims {
		parts = append(parts, j.sideNote(l, c))
		by := j.probeSide(l, c)
		makerGone := by.State == StateAbsent || by.State == StateZombie
		if c.Kind == scan.ClaimBuild && c.Maker {
			// A build is debris once its maker is gone, whatever its record.
			done = done && makerGone
			sub, _, _ := strings.Cut(c.Record.File, "/")
			steps = append(steps, Step{Op: OpRemove, Path: filepath.Join(l.Dir, sub, "holder")}, Step{Op: OpRmdir, Path: filepath.Join(l.Dir, sub)})
			continue
		}
		var rec judged
		if c.Record.Err != nil || c.Record.Holder == nil {
			rec = j.record(l, &c.Record)
		} else {
			rec = j.claimedRecord(l, c)
		}
		if !makerGone || rec.v != Gone {
			done = false
			parts[len(parts)-1] += fmt.Sprintf(", holding a record that is %s", rec.v)
		}
		steps = append(steps, Step{Op: OpRemove, Path: filepath.Join(l.Dir, c.Record.File)})
		if sub := filepath.Dir(c.Record.File); sub != "." {
			steps = append(steps, Step{Op: OpRmdir, Path: filepath.Join(l.Dir, sub)})
		}
	}
	if !done {
		r.Reason = fmt.Sprintf("%d side files and no holder: %s; resolve them by hand", len(claims), strings.Join(parts, "; "))
		return r
	}
	r.Reason = fmt.Sprintf("%d side files, all abandoned by makers that are gone and all holding records of holders that are gone: %s", len(claims), strings.Join(parts, "; "))
	if l.Kind == scan.KindDir {
		r.Remove = append(r.Remove, Step{Op: OpRmdir, Path: l.Path})
	}
	r.Remove = append(r.Remove, steps...)
	return r
}

// claimedRecord judges the holder record a claim holds. A record of a gone
// holder that a running process still flocks (a pid file claimed by a
// break) is in use: live, so it goes back rather than away.
func (j *Judge) claimedRecord(l *scan.Lock, c scan.Claim) judged {
	rec := j.holder(c.Record.Holder, c.Record.Format(), c.Record.Info, l.FS)
	if rec.v == Gone {
		if by, ok := j.lockedBy(c.Record.Info); ok {
			rec.v, rec.reason = Live, fmt.Sprintf("%s, but %s", rec.reason, by)
		}
	}
	return rec
}

// unreadable reports whether a side file could not be read at all (as
// opposed to read and found malformed).
func unreadable(r scan.Record) bool {
	var fe *scan.FormatError
	return r.Err != nil && !errors.As(r.Err, &fe)
}

// belongs reports whether claim c can be about lock directory l. A claim
// holds a record written after its lock directory was made; one older than
// the directory was left by a break or release of an earlier lock at this
// path (whose directory is long gone), and finishing it would remove a
// directory made since by someone else.
func belongs(l *scan.Lock, c scan.Claim) bool {
	return l.Kind != scan.KindDir || !c.Record.Info.Mtime.Before(l.Info.Created())
}

// restoreTarget is where a claimed record goes back to, or "" if it cannot.
func restoreTarget(l *scan.Lock, c scan.Claim) string {
	switch c.Record.Format() {
	case scan.FormatRegistryA:
		if l.Kind == scan.KindDir {
			return l.Path + ".holder"
		}
	case scan.FormatRegistryB:
		if l.Kind == scan.KindDir && c.Record.Holder != nil {
			return filepath.Join(l.Path, "holder."+c.Record.Holder.Token)
		}
	case scan.FormatLockctl:
		if l.Kind == scan.KindDir {
			return filepath.Join(l.Path, "holder")
		}
	default:
		if l.Kind == scan.KindMissing {
			return l.Path
		}
	}
	return ""
}

// probeSide asks about the process a side file names (its maker, or for a
// file named by a holder's token, that holder) in the pid namespace it is
// of: the one its name or record gives, this one for a generation B token
// whose record has this host's scope, or, where nothing says, any.
func (j *Judge) probeSide(l *scan.Lock, c scan.Claim) Proc {
	if c.By <= 0 || c.By > j.Host.PidMax {
		return Proc{State: StateUnknown, Err: errors.New("the file name carries no usable pid")}
	}
	ns := c.NS
	if h := c.Record.Holder; ns == "" && !c.Maker && h != nil && h.Scope != "" && h.Scope == j.Host.Scope {
		ns = j.Host.PidNS
	}
	return j.probeIn(c.By, ns, l.FS.Remote)
}

// probeIn asks about pid as a pid of pid namespace ns, "" when nothing says
// which. A pid of another namespace is never asked about here, where the
// number names some other process: it is gone only when its namespace has
// ended (on a local file system, where the namespace is this machine's),
// and unknown otherwise. A pid of no stated namespace that is absent here
// is gone only when no namespace has it.
func (j *Judge) probeIn(pid int64, ns string, remote bool) Proc {
	if pid <= 0 || pid > j.Host.PidMax {
		return Proc{State: StateUnknown, Err: fmt.Errorf("pid %d is out of range (1 to %d)", pid, j.Host.PidMax)}
	}
	if ns != "" && ns != j.Host.PidNS {
		if !remote {
			if used, err := j.nsInUse(ns); err == nil && !used {
				return Proc{State: StateAbsent, Err: fmt.Errorf("its pid namespace %s has ended", ns)}
			}
		}
		return Proc{State: StateUnknown, Err: fmt.Errorf("it is a pid of pid namespace %s, not of this one (%s): judge it inside that namespace", ns, j.Host.PidNS)}
	}
	p := j.Probe.Probe(int(pid))
	if ns == "" && (p.State == StateAbsent || p.State == StateZombie) {
		if why := j.elsewhere(int(pid)); why != "" {
			return Proc{State: StateUnknown, Err: fmt.Errorf("it is not running in this pid namespace, but nothing says which namespace it is of, and %s", why)}
		}
	}
	return p
}

// elsewhere says why pid, absent (or a zombie) in this pid namespace, may
// still be a live process's pid in another, or "" when this reader sees
// every pid namespace and no live process has pid in any of them.
func (j *Judge) elsewhere(pid int) string {
	ps, ok := j.Probe.(PidSpace)
	if !ok {
		return errNoPidSpace.Error()
	}
	idx, err := ps.Namesakes()
	if err != nil {
		return err.Error()
	}
	if ns := idx[pid]; len(ns) > 0 {
		n := ns[0]
		where := "a pid namespace below this one"
		if n.NS != "" {
			where = "pid namespace " + n.NS
		}
		return fmt.Sprintf("pid %d (%s) is pid %d in %s: the record may be that process's; judge it inside that namespace", n.Pid, n.Comm, n.Inner, where)
	}
	return ""
}

// nsInUse asks the probe whether any process is in pid namespace ns.
func (j *Judge) nsInUse(ns string) (bool, error) {
	ps, ok := j.Probe.(PidSpace)
	if !ok {
		return false, errNoPidSpace
	}
	return ps.NamespaceInUse(ns)
}

func (j *Judge) sideNote(l *scan.Lock, c scan.Claim) string {
	return fmt.Sprintf("side file %s: %s by %s", quoteName(c.Record.File), c.Kind, byWord(c.By, j.probeSide(l, c)))
}

func byWord(pid int64, p Proc) string {
	switch {
	case pid <= 0:
		return "an unnamed process"
	case p.State == StateRunning:
		return fmt.Sprintf("pid %d (running)", pid)
	case p.State == StateZombie:
		return fmt.Sprintf("pid %d (a zombie)", pid)
	case p.State == StateAbsent:
		return fmt.Sprintf("pid %d (not running)", pid)
	}
	return fmt.Sprintf("pid %d (state unknown)", pid)
}

func modeWord(m fs.FileMode) string {
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

func stamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

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

package verdict

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
)

// Judging what a holder record says: where it was written, whether this
// reader may judge its pid at all, and what the kernel says of that pid.

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
	if u := scan.UnitOf(l); u != nil && u.StaleIfOlderThanDir && rec.Info.Mtime.Before(l.Info.Created()) {
		return judged{v: Ownerless, holder: rec.Holder, reason: fmt.Sprintf(
			"the holder record %s (written %s) is older than the lock directory (made %s): it was left by an earlier holder, and this directory's owner is unknown",
			rec.File, stamp(rec.Info.Mtime), stamp(l.Info.Created()))}
	}
	if jd, decided := j.producerHolder(l, rec.Holder); decided {
		return jd
	}
	h := rec.Holder
	if h.HostAddr {
		// Firefox names its host by address: this host's, or another's.
		c := *h
		if w, ok := j.Evidence.(AddrWitness); ok && w.IsLocalAddr(h.Host) {
			c.Host = ""
		}
		h = &c
	}
	jd := j.holder(h, l.Format, rec.Info, l.FS)
	return j.producerAfter(l, h, jd)
}

// holder judges what one record says, given when the record was written.
// The order is the argument: where a record was written decides whether
// this host may judge it at all, before any pid is looked at, because a pid
// from another host or namespace names some unrelated process here.
func (j *Judge) holder(h *scan.Holder, format scan.Format, info fsx.Stat, fs fsx.FS) judged {
	if jd, decided := j.scopeOf(h, info, fs); decided {
		return jd
	}
	if jd, decided := j.placeOf(h, fs); decided {
		return jd
	}
	if h.Reserved {
		// Of this host and boot: judged by its deadline, not by a pid,
		// and in any pid namespace, since the clock is the kernel's.
		return j.reservation(h)
	}
	if jd, decided := j.nsOf(h, fs); decided {
		return jd
	}
	written := info.Mtime
	// A pid of a record that names its namespace (lockctl's own, a
	// generation B scope) is of this namespace by now; any other could have
	// been written in any namespace.
	placed := h.PidNS != "" || h.Scope != ""
	jd := j.process(h, h.PidText, h.Pid, h.Start, h.HasStart, h.RawStart, placed, format, written)
	// Processes recorded together with the holder hold the lock with it.
	for _, a := range h.Also {
		if jd.v == Live {
			break
		}
		if also := j.process(h, strconv.FormatInt(a.Pid, 10), a.Pid, a.Start, true, false, placed, format, written); jd.moreHeld(also) {
			also.reason = "the holder is gone, but " + also.reason + " (recorded with it)"
			jd = also
		}
	}
	return jd
}

// scopeOf judges a generation B record by its scope, the digest of the
// machine, boot and pid namespace it was written in: decided is true when
// that alone gives the verdict (another scope, or one that cannot be
// checked), false when the record is this host's own or has no scope.
func (j *Judge) scopeOf(h *scan.Holder, info fsx.Stat, fs fsx.FS) (judged, bool) {
	jd := judged{holder: h}
	out := func(v Verdict, format string, args ...any) (judged, bool) {
		jd.v, jd.reason = v, fmt.Sprintf(format, args...)
		return jd, true
	}
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
				if j.Host.BootIDErr != nil {
					// The digests of this boot's namespaces hash its boot
					// id, and this reader's is only a file.
					return out(Foreign, "its scope is not this machine's, boot's and pid namespace's, and the record is dated %s, before this host booted, but this reader's boot id is not the kernel's word (%v), so which scopes this boot's pid namespaces have cannot be computed: judge it where it was written (host %s)", stamp(info.Mtime), j.Host.BootIDErr, h.Host)
				}
				w, ok := j.Evidence.(ScopeWitness)
				if !ok {
					return out(Foreign, "its scope is not this machine's, boot's and pid namespace's, and the record is dated %s, before this host booted, but whether a pid namespace of this boot wrote it cannot be checked here: judge it where it was written (host %s)", stamp(info.Mtime), h.Host)
				}
				switch used, complete := w.ScopeInUse(h.Scope, j.Host); {
				case used:
					return out(Foreign, "its scope is that of a pid namespace of this boot, though the record is dated %s, before this host booted (a clock set late?): judge it inside that namespace", stamp(info.Mtime))
				case !complete:
					return out(Foreign, "its scope is not this machine's, boot's and pid namespace's, and the record is dated %s, before this host booted, but not every pid namespace of this boot could be seen to rule it out (%s): judge it where it was written (host %s)", stamp(info.Mtime), j.Host.LookHint(), h.Host)
				}
				jd = proved(jd, fmt.Sprintf("its scope is not this boot's, and the record was written at %s, before this host booted at %s: its holder ended with an earlier boot", stamp(info.Mtime), stamp(j.Host.BootTime)),
					Fact{OtherBoot, "the record's date, before this boot's btime less BootMargin (this host's name, a local disk)", ""},
					Fact{NoScope, "the scope of every pid namespace of this boot, hashed with the machine id and boot id under each process's root", ""})
				return jd, true
			}
			return out(Foreign, "its scope is not this machine's, boot's and pid namespace's: judge it where it was written (host %s)", h.Host)
		}
	}
	return jd, false
}

// placeOf judges where record h says it was written (host, boot, pid
// namespace): decided is true when that alone gives the verdict, false when
// the record is of this host, boot and namespace, and its pid may be asked
// about here.
func (j *Judge) placeOf(h *scan.Holder, fs fsx.FS) (judged, bool) {
	jd := judged{holder: h}
	out := func(v Verdict, format string, args ...any) (judged, bool) {
		jd.v, jd.reason = v, fmt.Sprintf(format, args...)
		return jd, true
	}
	// On a local file system a record of this boot was written by this
	// kernel, whatever host name it gives: a UTS namespace (a container, a
	// sandbox) renames the host for its own processes only. On a network
	// file system another machine may share the boot id (VMs cloned from
	// one snapshot), and where this reader's boot id is only a file
	// (Host.BootIDErr) it proves nothing, so there the name is checked too.
	if h.Host != "" && !j.thisKernel(h, fs) {
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
			// Another boot, if both boot ids are the kernel's: see boot.go.
			if jd, decided := j.otherBoot(h); decided {
				return jd, true
			}
		}
	}
	if h.Host == "" && fs.Remote {
		return out(Foreign, "the record is a bare pid on a network file system (%s), where it may belong to another host: judge it on the host that wrote it", fs.Name)
	}
	if fs.Remote && h.BootID == "" && h.Scope == "" {
		// A host name alone does not place a record on a shared file
		// system: names are not unique (a container's UTS name,
		// "localhost", VMs cloned from one snapshot), so a record that
		// names this host may be another machine's, whose pid names some
		// unrelated process here. Only a boot id or a scope places it.
		return out(Foreign, "the record names host %s but no boot, on a network file system (%s) that other machines may share, and a host name is not unique (containers, cloned VMs, localhost): judge it on the machine that wrote it", h.Host, fs.Name)
	}
	return jd, false
}

// nsOf judges a record of this host and boot by its pid namespace: decided
// is true when that alone gives the verdict (another namespace, in use or
// ended).
func (j *Judge) nsOf(h *scan.Holder, fs fsx.FS) (judged, bool) {
	jd := judged{holder: h}
	out := func(v Verdict, format string, args ...any) (judged, bool) {
		jd.v, jd.reason = v, fmt.Sprintf(format, args...)
		return jd, true
	}
	if h.PidNS != "" && h.PidNS != j.Host.PidNS {
		if !j.thisKernel(h, fs) {
			return out(Foreign, "the record names pid namespace %s, %s: judge it inside that namespace", h.PidNS, j.thisNS())
		}
		// A namespace no process is in has ended, and every process of it
		// with it: once its init exits, nothing can enter it again.
		switch used, err := j.nsInUse(h.PidNS); {
		case err != nil:
			return out(Foreign, "the record names pid namespace %s, %s: judge it inside that namespace (whether it has ended cannot be told here: %v)", h.PidNS, j.thisNS(), err)
		case used:
			return out(Foreign, "the record names pid namespace %s, %s: judge it inside that namespace", h.PidNS, j.thisNS())
		}
		return proved(jd, fmt.Sprintf("the record names pid namespace %s, and no process on this machine is in it any more: that namespace has ended, and pid %s with it", h.PidNS, h.PidText),
			Fact{EndedNS, "every process's /proc/<pid>/ns/pid, read from the initial pid namespace with every process visible", ""}), true
	}
	return jd, false
}

// thisNS says which pid namespace this reader is in, for a reason that
// compares it with a record's: never an empty name.
func (j *Judge) thisNS() string {
	if j.Host.PidNS == "" {
		return "and this reader's own cannot be read"
	}
	return "and this is " + j.Host.PidNS
}

// pidSpace is the premise that no process has a pid absent here: from this
// pid namespace alone for a pid of it (placed), and from every pid
// namespace's pids and thread ids for one of no stated namespace, whose
// gaps elsewhere has said already (process stops at them first).
func (j *Judge) pidSpace(placed bool) Fact {
	if placed {
		return Fact{NoProcess, "pidfd_open and kill(pid, 0) in this pid namespace, which the record names", ""}
	}
	f := j.namesakes(false)
	f.Premise = NoProcess
	if f.Source == everyNamespace {
		f.Source = hereAndEveryNamespace // one string for every such lock, not one each
	} else {
		f.Source = "pidfd_open and kill(pid, 0) here, and " + f.Source
	}
	return f
}

// The sources of the premises of a pid of no stated namespace.
const (
	everyNamespace        = "the pids and thread ids (NSpid) of every process in every pid namespace"
	hereAndEveryNamespace = "pidfd_open and kill(pid, 0) here, and " + everyNamespace
)

// namesakes is the premise that no other pid namespace has the pid, for a
// record of no stated namespace (placed false): covered only where this
// reader sees every pid namespace.
func (j *Judge) namesakes(placed bool) Fact {
	if placed {
		return Fact{NoNamesake, "the record, which names this pid namespace", ""}
	}
	f := Fact{NoNamesake, everyNamespace, ""}
	if _, ok := j.Probe.(PidSpace); !ok {
		f.Gap = "this probe cannot look into other pid namespaces"
	}
	return f
}

// process judges one recorded process of record h: pid (as written, pidText),
// with its start time when the record fences it (raw: as its writer was
// shown it, scan.Holder.RawStart). placed says the pid is of this pid
// namespace; otherwise it is gone only if no namespace has it.
func (j *Judge) process(h *scan.Holder, pidText string, pid64 int64, start uint64, fenced, raw, placed bool, format scan.Format, written time.Time) judged {
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
		return j.notRunning(jd, h, p, pid, placed, format)
	case StateRunning:
	default:
		return out(Unknown, "cannot tell whether pid %d is running: %s", pid, errText(p.Err))
	}
	if fenced {
		return j.fencedRunning(jd, p, pid, start, raw, placed)
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

// notRunning judges process's pid p, which the probe found absent or a
// zombie: gone, with the premises it rests on, unless the pid may name a
// process in another pid namespace.
func (j *Judge) notRunning(jd judged, h *scan.Holder, p Proc, pid int, placed bool, format scan.Format) judged {
	out := func(v Verdict, format string, args ...any) judged {
		jd.v, jd.reason = v, fmt.Sprintf(format, args...)
		return jd
	}
	if u := scan.UnitOfFormat(format); u != nil && u.UnscopedMayBeElsewhere && h.Scope == "" {
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
	where := j.pidSpace(placed)
	if p.State == StateZombie {
		return proved(jd, fmt.Sprintf("pid %d is a zombie (%s): it has exited and can never release the lock", pid, p.Comm),
			Fact{Exited, "/proc/<pid>/stat, state Z or X with one thread, read through a /proc of this pid namespace", ""}, where)
	}
	return proved(jd, fmt.Sprintf("pid %d is not running", pid), where)
}

// fencedRunning judges process's running pid p against the start time
// the record fences it with (start; raw: as its writer was shown it):
// live if it matches, gone only if another process has the pid in one
// clock with the record's and no other pid namespace can have it.
func (j *Judge) fencedRunning(jd judged, p Proc, pid int, start uint64, raw, placed bool) judged {
	out := func(v Verdict, format string, args ...any) judged {
		jd.v, jd.reason = v, fmt.Sprintf(format, args...)
		return jd
	}
	now, has := startAsRecorded(p, raw)
	switch {
	case !has:
		return out(Unknown, "pid %d is running, but its start time cannot be read (%s)", pid, errText(p.Err))
	case now == start:
		return out(Live, "pid %d (%s) is running and its start time matches the record", pid, p.Comm)
	}
	if err := j.oneClock(pid, raw); err != nil {
		return out(Unknown, "pid %d is running with start time %d as this reader is shown it, not the recorded %d, but the record's start time is in its writer's time namespace's clock, which may not be this reader's: %s", pid, now, start, errText(err))
	}
	if !placed {
		// Another process has that pid here, but a record that
		// does not say its pid namespace may be of a process that
		// has it in another (filelock's SoftFileLock in a
		// container): as for an absent pid, gone only when none has.
		if why := j.elsewhere(pid); why != "" {
			return out(Unknown, "pid %d is another process here (start time %d, not the recorded %d), but the record does not say which pid namespace wrote it, and %s", pid, now, start, why)
		}
	}
	return proved(jd, fmt.Sprintf("pid %d is running but its start time is %d, not the recorded %d: it is another process", pid, now, start),
		Fact{OtherProcess, "field 22 of /proc/<pid>/stat, pinned by a pidfd, in one clock with the record's", ""}, j.namesakes(placed))
}

// startAsRecorded is pid's start time as p read it, in the clock a record
// counts in: from the real boot (Start, lockctl's own records, written
// through the same correction), or as this reader is shown it (Shown) for
// a raw record (filelock's, field 22 as its writer was shown it). has is
// false when the probe could not read it.
func startAsRecorded(p Proc, raw bool) (now uint64, has bool) {
	if raw {
		return p.Shown, p.HasShown
	}
	return p.Start, p.HasStart
}

// oneClock is the rule for comparing start times: a mismatch between a
// record's start time and the one read here proves another process only
// when the two are in one clock. lockctl's own records (raw false) count
// from the real boot, as the probe's Start does: always one clock. A raw
// record counts in its writer's time namespace's clock, which is the one
// this reader is shown only when the live pid is in this reader's time
// namespace and this reader's offsets are its own (ClockWitness); any
// doubt is an error, and the mismatch is then no proof. (An exact match
// needs no proof: held either way.)
func (j *Judge) oneClock(pid int, raw bool) error {
	if !raw {
		return nil
	}
	w, ok := j.Probe.(ClockWitness)
	if !ok {
		return errNoClock
	}
	return w.SameClock(pid)
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
	if res, decided := j.producerNoRecord(r); decided {
		return res // npm's proper-lockfile
	}
	switch {
	case l.Kind == scan.KindDir && l.Format == scan.FormatEmpty:
		r = r.set(judged{v: Ownerless, reason: "the lock directory is empty and there is no holder file beside it"})
	case l.Kind == scan.KindDir && evidenceOnly(l) != "":
		r = r.set(judged{v: Ownerless, reason: evidenceOnly(l)})
	case l.Kind == scan.KindDir:
		r = r.set(judged{v: Ownerless, reason: fmt.Sprintf("the lock directory holds no holder record (it holds %d other entries)", len(l.Others))})
	default:
		r = r.set(judged{v: Ownerless, reason: "there is no owner record"})
	}
	r.ownerlessRemedy()
	return r
}

// probeIn asks about pid as a pid of pid namespace ns, "" when nothing says
// which. A pid of another namespace is never asked about here, where the
// number names some other process: it is gone only when its namespace has
// ended (on a local file system, where the namespace is this machine's),
// and unknown otherwise. A pid of no stated namespace that is absent here
// is gone only when no namespace has it; on a network file system (remote)
// it is unknown, since it may be another machine's.
func (j *Judge) probeIn(pid int64, ns string, remote bool) Proc {
	if pid <= 0 || pid > j.Host.PidMax {
		return Proc{State: StateUnknown, Err: fmt.Errorf("pid %d is out of range (1 to %d)", pid, j.Host.PidMax)}
	}
	if ns == "" && remote {
		// Nothing places the pid on this machine, and on a shared file
		// system it may be another's.
		return Proc{State: StateUnknown, Err: errors.New("it is named on a network file system, and nothing says which machine or pid namespace it is of: judge it on the machine that wrote it")}
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
	var ns []Namesake
	if one, ok := ps.(PidNamesakes); ok {
		var err error
		if ns, err = one.NamesakesOf(pid); err != nil {
			return err.Error()
		}
	} else {
		idx, err := ps.Namesakes()
		if err != nil {
			return err.Error()
		}
		ns = idx[pid]
	}
	if len(ns) > 0 {
		n := ns[0]
		where := "a pid namespace below this one"
		if n.NS != "" {
			where = "pid namespace " + n.NS
		}
		if n.Leader != 0 {
			return fmt.Sprintf("thread %d (%s) of process %d is thread %d in %s, and a thread's id names its process: the record may be that process's; judge it inside that namespace", n.Pid, n.Comm, n.Leader, n.Inner, where)
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

// evidenceOnly is why the lock directory l, which holds no record, is
// owner-less by its format's rule when it holds only evidence of holders,
// or "".
func evidenceOnly(l *scan.Lock) string {
	if u := scan.UnitOf(l); u != nil {
		return u.EvidenceOnly
	}
	return ""
}

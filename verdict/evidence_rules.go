package verdict

import (
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
)

// Looking past the record: who the kernel's tables say holds a lock that
// has no usable owner record, or whose recorded holder is gone.

// kernelHolders asks the kernel who holds an owner-less lock: a live
// process with an advisory lock on it, or with it open, holds it.
func (j *Judge) kernelHolders(r Result) Result {
	l := r.Lock
	if j.Evidence == nil || l.Kind == scan.KindMissing {
		return r
	}
	type file struct {
		dir, name string // where it is, where known
		info      fsx.Stat
	}
	files := []file{{l.Dir, lockFileName(l), l.Info}}
	for _, h := range l.Holders {
		// A lock file is its own record: ask about each inode once.
		if h.Info.Ino != 0 && !h.Info.SameFile(l.Info) {
			files = append(files, file{info: h.Info})
		}
	}
	var found []KernelHolder
	complete := true
	for _, f := range files {
		hs, c := j.Evidence.Holders(f.info.Dev, f.info.Ino)
		if len(hs) == 0 {
			// Evidence cut down to its lock table (LocksOnly: a waiting
			// acquirer) still knows the locks held.
			hs = j.lockHolders(j.tableCover(f.dir, f.name, f.info).Dev, f.info)
		}
		found = append(found, hs...)
		complete = complete && c
	}
	if len(found) == 0 {
		emptyFile := l.Kind == scan.KindFile && l.Format == scan.FormatEmpty && l.Producer == ""
		complete = j.vouchedLook(&r, complete)
		r.Seen = SeenComplete
		switch {
		case !complete:
			r.Seen = SeenPartial
			if emptyFile {
				r.Notes = append(r.Notes, EmptyFileReadings)
			}
			r.Notes = append(r.Notes, "no process was seen holding it, but not every process's open files could be read"+j.unreadText()+" ("+j.Host.LookHint()+")")
		case emptyFile:
			// Nobody holds it or has it open, and nothing says whose it
			// is: not a fault, and not free either (IdleReason).
			r.Verdict, r.Reason, r.Remove, r.Caveat = Idle, IdleReason, nil, ""
		}
		return r
	}
	r.Kernel = found
	if d, ok := j.Evidence.(LockDetail); ok {
		r.Waiters = d.Waiters(j.tableCover(l.Dir, lockFileName(l), l.Info).Dev, l.Info.Ino)
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

// vouchedLook says whether a look that found no holder of r's lock is
// complete, given that the evidence's own answer was complete: where it
// is complete only because an operator vouched (--not-a-holder) for
// processes whose open files cannot be read, the verdict says so; and a
// vouch never covers a process that is this lock's recorded holder.
func (j *Judge) vouchedLook(r *Result, complete bool) bool {
	u, ok := j.Evidence.(Unread)
	if !complete || !ok {
		return complete
	}
	_, vouched := u.Unread()
	if len(vouched) == 0 {
		return true
	}
	for _, rec := range r.Lock.Holders {
		for _, v := range vouched {
			if rec.Holder != nil && rec.Holder.Pid == int64(v.Pid) {
				r.Notes = append(r.Notes, fmt.Sprintf("--not-a-holder %d is not taken for this lock: pid %d is its recorded holder", v.Pid, v.Pid))
				return false
			}
		}
	}
	r.Notes = append(r.Notes, "the look at every process's open files is complete only because --not-a-holder vouched that "+names(vouched)+", whose open files cannot be read, holds none of these locks")
	return true
}

// unreadText names the processes whose open files could not be read, as
// ": pid 1 (init)", where the evidence names them.
func (j *Judge) unreadText() string {
	if u, ok := j.Evidence.(Unread); ok {
		if unread, _ := u.Unread(); len(unread) > 0 {
			return ": " + names(unread) + "; 'lockctl doctor --not-a-holder PID' vouches for one known to hold none of these locks"
		}
	}
	return ""
}

// lockedAnyway keeps a gone lock held when a live process has an advisory
// lock (flock, POSIX or OFD) on it: tools that flock their pid file, or an
// inherited lock, say the lock is in use whatever pid the record names.
// Files merely held open do not count here: a reader, another doctor or a
// waiting acquirer opens a lock without holding it. Where "no lock on it"
// cannot be proved (advisoryOn), the lock is not gone but unknown.
func (j *Judge) lockedAnyway(r Result) Result {
	l := r.Lock
	if l.Kind == scan.KindMissing {
		return r
	}
	a := j.advisoryOn(l.Dir, lockFileName(l), l.Info)
	switch {
	case len(a.holders) > 0:
		r.Verdict, r.Remove, r.Caveat = Live, nil, ""
		r.Reason = fmt.Sprintf("%s, but %s: the lock is in use", r.Reason, a.text)
		r.Kernel = a.holders
	case r.Verdict == Gone:
		// The last premise of gone, with the source it came from: a doubt
		// here makes the lock unknown (premise.go).
		r.Facts = append(r.Facts, Fact{NoKernelLock, a.source, a.doubt})
		r = r.reprove()
	}
	return r
}

// LockedHere says whether a process of this host holds an advisory lock on
// the lock file l (or, claimed, on its claim: lockFileName), by the same
// premise as every gone verdict here (advisoryOn): held names how, doubt
// why that cannot be proved either way; both "" when no lock is held. For a
// lock judged gone on another host (doctor --fix --via): its kernel's
// answer covers its own processes, never this host's, which may lock the
// same file on a shared volume.
func (j *Judge) LockedHere(l *scan.Lock) (held, doubt string) {
	if j.Evidence == nil {
		return "", "this host's kernel was not asked"
	}
	a := j.advisoryOn(l.Dir, lockFileName(l), l.Info)
	switch {
	case len(a.holders) > 0:
		return a.text, ""
	case !a.none:
		return "", a.doubt
	}
	return "", ""
}

// lockFileName is where the lock l stands in l.Dir now: its name, or, for
// a lock file that is its own record and has been claimed out of its name
// (fix's second judgement), the claim's name, where the same inode is.
func lockFileName(l *scan.Lock) string {
	if l.Kind == scan.KindFile && len(l.Holders) == 1 {
		if h := l.Holders[0]; h.Info.SameFile(l.Info) && h.File != "" && !strings.ContainsRune(h.File, '/') {
			return h.File
		}
	}
	return l.Name
}

// advisory is what the kernel says of the advisory locks on one file: the
// holders found (text names the first in words), or else whether "no lock
// on it" is proved (none) or only not seen (doubt says why).
type advisory struct {
	holders []KernelHolder
	text    string
	none    bool
	doubt   string
	source  string // where the answer came from (a Fact's Source)
	dev     uint64 // the device the lock table lists the file under
}

// Where an answer about a file's advisory locks came from.
const (
	fromWholeTable = "the kernel's lock table, /proc/locks, read through a /proc of the initial pid namespace"
	fromPartial    = "the kernel's lock table, /proc/locks, read here"
	fromFile       = "the file itself, asked through a descriptor of its own (F_OFD_GETLK, and for --fix and acquire a non-blocking flock)"
	fromNothing    = "nothing: this judge was not given the kernel's lock table"
)

// partialTable is why a lock table that lists no lock on a file does not
// prove that none is held.
const partialTable = "the kernel's lock table here lists only this pid namespace's locks (or could not be read), so a lock held from the host or another container is not in it"

// advisoryOn is the one place that decides the premise "no process holds
// an advisory lock on this file", for every verdict that needs it (a gone
// holder, a claimed record, a kernel-lock file). The kernel's lock table
// (/proc/locks) proves it only where it covers the file (TableCover): it is
// the whole machine's (read through a /proc of the initial pid namespace
// that is this process's own, from procfs's own locks file), and it lists
// the file under a device that is surely the file's (its st_dev is its
// mount's, or on btrfs the superblock's, where a lock listed may be another
// subvolume's inode: held). One read in a child pid namespace lists only
// that namespace's locks (and drops those whose taker has exited), one that
// could not be read lists nothing, and one of a file whose st_dev is not
// its mount's (overlayfs) lists its locks under a device not known here:
// there the one file is asked instead (FileLocks), which no namespace
// filters, and without an answer the premise is a doubt. A judge given no
// Evidence at all was asked not to look (a reservation's judge): nothing is
// found, and nothing doubted. dir and name are where the file is, info what
// it was when judged.
func (j *Judge) advisoryOn(dir, name string, info fsx.Stat) advisory {
	if _, ok := j.Evidence.(LockTable); !ok {
		// No lock table: nil Evidence (not asked), or a platform without
		// one (docs/platforms.md).
		return advisory{none: true, source: fromNothing}
	}
	c := j.tableCover(dir, name, info)
	if hs := j.lockHolders(c.Dev, info); len(hs) > 0 {
		text := holdsText(hs[0])
		if c.Shared != "" {
			text += " (" + c.Shared + ")"
		}
		return advisory{holders: hs, text: text, source: fromPartial, dev: c.Dev}
	}
	if c.Whole {
		return advisory{none: true, source: fromWholeTable, dev: c.Dev}
	}
	doubt, host := partialTable, ": judge it from the host"
	if c.Doubt != "" {
		doubt, host = c.Doubt, ""
	}
	if info.Ino == 0 {
		return advisory{doubt: doubt + ", and the file's inode is not known, so it cannot be asked itself", source: fromPartial, dev: c.Dev}
	}
	if j.FileLocks == nil {
		return advisory{doubt: doubt + host, source: fromPartial, dev: c.Dev}
	}
	held, how, known := j.FileLocks.FileLocked(dir, name, info.Dev, info.Ino)
	switch {
	case known && held:
		return advisory{holders: []KernelHolder{{How: how}}, text: how, source: fromFile, dev: c.Dev}
	case known:
		return advisory{none: true, source: fromFile, dev: c.Dev}
	}
	return advisory{doubt: doubt + "; " + how, source: fromFile, dev: c.Dev}
}

// tableCover is how the lock table lists the file name in dir (info): as
// the evidence says (LockDetail), or else under its own device, and never
// as proof that no lock is held.
func (j *Judge) tableCover(dir, name string, info fsx.Stat) TableCover {
	if d, ok := j.Evidence.(LockDetail); ok {
		return d.Cover(dir, name, info)
	}
	return TableCover{Dev: info.Dev}
}

// lockedBy says how a kernel lock is held on the file name in dir (info),
// if one is: held; or, where that cannot be told, why (doubt).
func (j *Judge) lockedBy(dir, name string, info fsx.Stat) (by string, held bool, doubt string) {
	a := j.advisoryOn(dir, name, info)
	if len(a.holders) > 0 {
		return a.text, true, ""
	}
	return "", false, a.doubt
}

// lockHolders are the advisory locks the kernel's lock table shows on the
// file info describes, listed under the device dev (its TableCover's),
// each with its holder where one can be named.
func (j *Judge) lockHolders(dev uint64, info fsx.Stat) []KernelHolder {
	t, ok := j.Evidence.(LockTable)
	if !ok || info.Ino == 0 {
		return nil
	}
	hs := t.Locks(dev, info.Ino)
	if len(hs) > 0 && hs[0].Pid == 0 {
		// Its taker has exited: name who has it open, which costs a scan of
		// every process's files, asked only in this rare case.
		all, _ := j.Evidence.Holders(info.Dev, info.Ino)
		for _, o := range all {
			if o.How != "open" && o.Pid > 0 {
				hs[0].Pid, hs[0].Comm = o.Pid, o.Comm
				break
			}
		}
	}
	return hs
}

// holdsText says in words how h holds a lock.
func holdsText(h KernelHolder) string {
	if h.Pid > 0 {
		return fmt.Sprintf("%s held by pid %d (%s)", h.How, h.Pid, h.Comm)
	}
	return fmt.Sprintf("the kernel's lock table still holds it (%s, taken by a process that has exited: an inherited descriptor or an OFD lock keeps it)", h.How)
}

// kernelLock judges a kernel-lock file (scan.Lock.KernelLock), whose
// existence means nothing: it is held while the kernel's lock table shows an
// advisory lock on it, and free when the whole table shows none. Nothing
// about it is ever removed: the kernel frees it on every kind of death.
func (j *Judge) kernelLock(r Result) Result {
	l := r.Lock
	what := fmt.Sprintf("a kernel-lock file of %s", l.KernelLock)
	if _, ok := j.Evidence.(LockTable); !ok {
		return r.set(judged{v: Unknown, reason: what + ", held only by a lock the kernel keeps, and the kernel's lock table was not read"})
	}
	a := j.advisoryOn(l.Dir, l.Name, l.Info)
	switch {
	case len(a.holders) > 0:
		r = r.set(judged{v: Live, reason: what + ": " + a.text})
		r.Kernel = a.holders
		if d, ok := j.Evidence.(LockDetail); ok {
			r.Waiters = d.Waiters(a.dev, l.Info.Ino)
		}
		return r
	case !a.none:
		return r.set(judged{v: Unknown, reason: what + ": no lock on it is listed, but " + a.doubt})
	}
	return r.set(judged{v: Free, reason: what + ": no process holds a lock on it, so it is free (the kernel frees it when its holder dies; the file itself is never removed)"})
}

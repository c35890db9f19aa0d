package verdict

import (
	"fmt"

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
		if len(hs) == 0 {
			// Evidence cut down to its lock table (LocksOnly: a waiting
			// acquirer) still knows the locks held.
			hs = j.lockHolders(f)
		}
		found = append(found, hs...)
		complete = complete && c
	}
	if len(found) == 0 {
		if l.Kind == scan.KindFile && l.Format == scan.FormatEmpty {
			r.Notes = append(r.Notes, EmptyFileReadings)
		}
		r.Seen = SeenComplete
		if !complete {
			r.Seen = SeenPartial
			r.Notes = append(r.Notes, "no process was seen holding it, but not every process's open files could be read (run as root with CAP_SYS_PTRACE to be sure)")
		}
		return r
	}
	r.Kernel = found
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
	if hs := j.lockHolders(l.Info); len(hs) > 0 {
		r.Verdict, r.Remove, r.Caveat = Live, nil, ""
		r.Reason = fmt.Sprintf("%s, but %s: the lock is in use", r.Reason, holdsText(hs[0]))
		r.Kernel = hs
	}
	return r
}

// lockedBy says who the kernel's lock table shows holding an advisory lock
// on the file info describes, if anyone.
func (j *Judge) lockedBy(info fsx.Stat) (string, bool) {
	hs := j.lockHolders(info)
	if len(hs) == 0 {
		return "", false
	}
	return holdsText(hs[0]), true
}

// lockHolders are the advisory locks the kernel's lock table shows on the
// file info describes, each with its holder where one can be named.
func (j *Judge) lockHolders(info fsx.Stat) []KernelHolder {
	t, ok := j.Evidence.(LockTable)
	if !ok || info.Ino == 0 {
		return nil
	}
	hs := t.Locks(info.Dev, info.Ino)
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
	if hs := j.lockHolders(l.Info); len(hs) > 0 {
		r = r.set(judged{v: Live, reason: what + ": " + holdsText(hs[0])})
		r.Kernel = hs
		if d, ok := j.Evidence.(LockDetail); ok {
			r.Waiters = d.Waiters(l.Info.Dev, l.Info.Ino)
		}
		return r
	}
	if d, ok := j.Evidence.(LockDetail); !ok || !d.WholeTable() {
		return r.set(judged{v: Unknown, reason: what + ": no lock on it is listed, but the kernel's lock table was not seen whole (in a child pid namespace it lists only that namespace's locks): judge it from the host"})
	}
	return r.set(judged{v: Free, reason: what + ": no process holds a lock on it, so it is free (the kernel frees it when its holder dies; the file itself is never removed)"})
}

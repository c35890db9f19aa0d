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

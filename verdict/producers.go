package verdict

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// The rules of the programs whose locks lockctl knows (scan/producers.go),
// each the program's own, so that lockctl never breaks what the program
// itself would not (docs/formats.md).

// gitLock judges a git lock file (<path>.lock under a git directory). git
// writes the new content into it and keeps no record of its holder, and
// while a commit sits in its editor it keeps no descriptor of it open
// either: the holder is a running git process that works in this
// repository, by the device and inode of its common git directory.
// git's own advice, once no git process runs there, is to remove the file.
func (j *Judge) gitLock(r Result) Result {
	l := r.Lock
	what := fmt.Sprintf("a git lock of the repository %s", quoteName(l.Repo.Path))
	w, ok := j.Evidence.(RepoWitness)
	if !ok {
		r = r.set(judged{v: Ownerless, reason: what + ", and no one asked which git processes run"})
		r.ownerlessRemedy()
		return r
	}
	hs, complete := w.GitWorkers(l.Repo.Dev, l.Repo.Ino)
	if len(hs) > 0 {
		h := hs[0]
		r = r.set(judged{v: Live, reason: fmt.Sprintf("%s: git process pid %d (%s) works in it", what, h.Pid, h.Comm)})
		r.Kernel = hs
		for _, o := range hs[1:] {
			r.Notes = append(r.Notes, fmt.Sprintf("also pid %d (%s) works in it", o.Pid, o.Comm))
		}
		return r
	}
	if !complete {
		return r.set(judged{v: Unknown, reason: what + ", and not every git process's working directory could be seen, so one may be working in it (run lockctl as root, from the host)"})
	}
	r = r.set(judged{v: Ownerless, reason: what + ", and no git process works in it (git records no holder: its own advice is then to remove the file)"})
	r.ownerlessRemedy()
	return r
}

// postgresShm keeps a PostgreSQL data directory's lock whose postmaster is
// gone while any process is still attached to the cluster's shared memory
// (line 7 of postmaster.pid): orphan backends of a SIGKILLed postmaster
// still run, and PostgreSQL itself refuses to start over them
// (miscinit.c, CreateLockFile, PGSharedMemoryIsInUse). A segment that
// cannot be examined counts as attached.
func (j *Judge) postgresShm(r Result) Result {
	pg := r.Lock.Postgres
	if pg == nil || !pg.HasShm {
		return r // the socket lock, or a file not yet written whole: the pid decides, as for PostgreSQL
	}
	w, ok := j.Evidence.(ShmWitness)
	seg := fmt.Sprintf("its shared memory segment (key %d, id %d)", pg.ShmKey, pg.ShmID)
	if !ok {
		return r.set(judged{v: Unknown, holder: r.Holder, started: r.Started, reason: fmt.Sprintf("%s, but whether %s is still attached was not asked", r.Reason, seg)})
	}
	switch inUse, known := w.ShmInUse(pg.ShmKey, pg.ShmID); {
	case !known:
		r = r.set(judged{v: Unknown, holder: r.Holder, started: r.Started, reason: fmt.Sprintf("%s, but %s cannot be examined from here (another IPC namespace, or no permission): backends of the cluster may still run", r.Reason, seg)})
	case inUse:
		r = r.set(judged{v: Live, holder: r.Holder, started: r.Started, reason: fmt.Sprintf("%s, but processes are still attached to %s: backends of the cluster still run (PostgreSQL refuses to start over them)", r.Reason, seg)})
	default:
		r.Reason = fmt.Sprintf("%s, and no process is attached to %s", r.Reason, seg)
		return r
	}
	r.Remove = nil
	return r
}

// producerHolder applies a producer's rule that comes before any pid is
// looked at: Mercurial takes a lock recorded in another pid namespace for
// held (mercurial/lock.py compares the whole "<host>/<namespace>" prefix),
// whether or not that namespace has ended.
func (j *Judge) producerHolder(l *scan.Lock, h *scan.Holder) (judged, bool) {
	if l.Producer == scan.ProducerMercurial && h.PidNS != "" && h.PidNS != j.Host.PidNS && strings.EqualFold(h.Host, j.Host.Name) {
		return judged{v: Foreign, holder: h, reason: fmt.Sprintf("Mercurial recorded pid %s in pid namespace %s, not this one (%s): hg itself takes such a lock as held; judge it inside that container", h.PidText, h.PidNS, j.Host.PidNS)}, true
	}
	return judged{}, false
}

// producerAfter applies a producer's rule to the verdict on its pid: Emacs
// records its own idea of the boot time, and takes a running pid whose
// boot time differs by more than a second for another boot's
// (src/filelock.c, current_lock_owner). Emacs's boot time and the kernel's
// btime come from different sources, so lockctl lets a mismatch make a
// running pid recycled, never gone.
func (j *Judge) producerAfter(l *scan.Lock, h *scan.Holder, jd judged) judged {
	if l.Producer != scan.ProducerEmacs || jd.v != Live || h.Booted.IsZero() || j.Host.BootTime.IsZero() {
		return jd
	}
	if d := h.Booted.Sub(j.Host.BootTime); d > time.Second || d < -time.Second {
		jd.v = Recycled
		jd.reason = fmt.Sprintf("pid %s is running, but Emacs recorded a boot at %s and this machine booted at %s: the pid belongs to another process (Emacs would take the lock)", h.PidText, stamp(h.Booted), stamp(j.Host.BootTime))
	}
	return jd
}

// producerGone applies a producer's rule to a lock whose holder is gone:
// PostgreSQL's shared memory, and vim's unsaved changes.
func (j *Judge) producerGone(r Result) Result {
	if r.Lock.Producer == scan.ProducerPostgres {
		r = j.postgresShm(r)
	}
	if v := r.Lock.Vim; v != nil && v.Dirty {
		// The one copy of someone's unsaved work: never removed.
		r.Remove = nil
		r.Notes = append(r.Notes, fmt.Sprintf("it holds changes to %s that were never saved: recover them with 'vim -r %s', then delete the swap file; lockctl never removes it", quoteName(v.File), v.File))
	}
	return r
}

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

// ageText is a short, rounded age: "0s" for a time ahead of this clock.
func ageText(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return d.Round(time.Minute).String()
}

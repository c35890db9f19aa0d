package verdict

import (
	"fmt"
)

// The postgresql format's judgement (its unit: scan/format_postgres.go): its producer's
// rule where it needs the kernel's evidence.
func init() { rule("postgresql", producerRule{gone: (*Judge).postgresShm}) }

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
	switch inUse, known := w.ShmInUse(pg.ShmKey, pg.ShmID, r.Lock.Dir); {
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

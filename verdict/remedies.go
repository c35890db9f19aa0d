package verdict

import (
	"path/filepath"

	"github.com/lockctl/lockctl/scan"
)

// What to remove, in order, for a lock whose verdict calls for it.

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

package verdict

import (
	"path/filepath"

	"github.com/lockctl/lockctl/scan"
)

// What to remove, in order, for a lock whose verdict calls for it.

// ownerlessRemedy proposes removing an owner-less lock, with the caveat,
// only where the lock holds nothing but what lockctl can account for: a
// lock file that says it was written without an owner ("0"), or an empty
// lock directory, the seed's legacy case. Bytes lockctl cannot parse may
// be another program's live lock or its data (issue 42), and an empty
// file may be a kernel-lock file some process is about to lock, where a
// removal lets a second process in beside the first (EmptyFileReadings
// says both readings): neither gets a remedy.
func (r *Result) ownerlessRemedy() {
	l := r.Lock
	if len(l.Others) > 0 {
		r.Notes = append(r.Notes, "the directory holds entries lockctl does not recognise; inspect it by hand")
		return
	}
	// A known producer's advice stands (git's: remove the file), and a lock
	// directory keeps its last-resort rmdir.
	if l.Producer == "" && l.Kind == scan.KindFile && l.Format != scan.FormatNoPid {
		if l.Format != scan.FormatEmpty { // an empty file: EmptyFileReadings says both readings
			r.Notes = append(r.Notes, "its bytes are not a record lockctl reads, so they may be another program's lock or data: inspect it by hand")
		}
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

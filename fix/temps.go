package fix

import (
	"fmt"
	"path/filepath"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/verdict"
)

// Temps removes the temporary files of res's lock whose producer is
// provably gone (verdict.TempState.Gone: this host's, its pid absent by
// the same probe and coverage rules as a holder's), and returns how many
// it removed and how many it kept. A temporary whose pid runs is a
// producer taking the lock: it is kept, as is every one in doubt.
//
// Each is removed only while it is still the file judged: the pid is
// asked again, then the name is lstat'ed afresh, relative to the lock's
// directory and never following a link, and must be the same inode of the
// same size and modification time as read (shadow's tools open their
// temporary with O_TRUNC, so a recycled pid's tool writes it again in
// place: its mtime moves); only then is it unlinked. A file put in its
// place between that lstat and the unlink is the one race left; the name
// is the producer's own and only a producer of that very pid makes it.
func (f *Fixer) Temps(res verdict.Result) (removed, keptN int) {
	l := res.Lock
	var d fsx.Dir
	opened := false
	for _, t := range res.Temps {
		if !t.Inert() {
			keptN++
			continue
		}
		if !opened {
			var err error
			if d, err = fsx.OpenDir(l.Dir); err != nil {
				return removed, len(res.Temps) - removed
			}
			defer d.Close()
			opened = true
		}
		// Judged again: the first judgement may be old.
		if !f.Judge.JudgeTemp(l, t.Temp).Inert() {
			keptN++
			continue
		}
		st, err := d.Lstat(t.Temp.Name)
		was := t.Temp.Info
		if err != nil || !was.Same(st) || st.Size != was.Size || !st.Mtime.Equal(was.Mtime) || !st.Mode.IsRegular() {
			keptN++
			continue
		}
		if f.Hook != nil {
			f.Hook(BeforeRemove, l)
		}
		if d.Remove(t.Temp.Name) != nil {
			keptN++
			continue
		}
		removed++
	}
	return removed, keptN
}

// onlyTemps sweeps a lock of which only its producer's temporary files
// remain (verdict's free verdict with Temps): those left by a pid that is
// gone.
func (f *Fixer) onlyTemps(res verdict.Result) Outcome {
	removed, keptN := f.Temps(res)
	switch {
	case removed == 0 && keptN > 0:
		return kept("kept %d temporary %s of %s: %s", keptN, plural(keptN, "file", "files"), filepath.Base(res.Lock.Path), "left by a pid that runs or is in doubt, or changed since it was read")
	case removed == 0:
		return skipped("no temporary file to remove")
	}
	o := Outcome{Action: Removed, Reason: fmt.Sprintf("removed %d temporary %s left by a producer that is gone", removed, plural(removed, "file", "files")), Gone: keptN == 0}
	if keptN > 0 {
		o.Reason += fmt.Sprintf("; kept %d (a pid that runs or is in doubt, or changed since it was read)", keptN)
	}
	return o
}

// withTemps removes, after a gone lock was swept, the temporaries its
// producer left with it, and says so in o.
func (f *Fixer) withTemps(res verdict.Result, o Outcome) Outcome {
	if len(res.Temps) == 0 || o.Action != Removed && !o.Gone {
		return o
	}
	removed, keptN := f.Temps(res)
	if removed > 0 {
		o.Reason += fmt.Sprintf("; removed %d temporary %s its producer left", removed, plural(removed, "file", "files"))
	}
	if keptN > 0 {
		o.Reason += fmt.Sprintf("; kept %d temporary %s (a pid that runs or is in doubt, another host's, or changed since it was read)", keptN, plural(keptN, "file", "files"))
	}
	return o
}

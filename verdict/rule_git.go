package verdict

import (
	"fmt"

	"github.com/lockctl/lockctl/scan"
)

// The git format's judgement (its unit: scan/format_git.go): its producer's
// rule where it needs the kernel's evidence.
func init() { rule("git", producerRule{lock: (*Judge).gitRule}) }

// gitRule judges a git lock file under a git directory by git's rule.
func (j *Judge) gitRule(r Result) (Result, bool) {
	if r.Lock.Kind != scan.KindFile || r.Lock.Repo == nil {
		return r, false
	}
	return j.gitLock(r), true
}

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

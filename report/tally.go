package report

import (
	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/verdict"
)

// Tally is what a doctor run counts: locks by verdict, --fix's actions, and
// whether any lock still needs attention. It is the one place that decides
// that a lock --fix removed or restored, or found already removed, no
// longer needs attention. It is not safe for concurrent use.
type Tally struct {
	Counts map[verdict.Verdict]int
	// Actions is nil unless the run fixes.
	Actions map[fix.Action]int
	// Fixable counts the gone locks that --fix would claim and remove
	// (those with a remedy: not a record its producers may rewrite in
	// place).
	Fixable   int
	Attention bool
	fail      map[verdict.Verdict]bool
}

// NewTally returns an empty tally for the fail set fail, counting actions
// when fixing.
func NewTally(fail map[verdict.Verdict]bool, fixing bool) *Tally {
	t := &Tally{Counts: make(map[verdict.Verdict]int, len(verdict.All)), fail: fail}
	for _, v := range verdict.All {
		t.Counts[v] = 0
	}
	if fixing {
		t.Actions = map[fix.Action]int{fix.Removed: 0, fix.Restored: 0, fix.Kept: 0, fix.Skipped: 0}
	}
	return t
}

// Add counts one judged lock, with what --fix did to it when o is not nil.
func (t *Tally) Add(res verdict.Result, o *fix.Outcome) {
	v := res.Verdict
	t.Counts[v]++
	if v == verdict.Gone && len(res.Remove) > 0 {
		t.Fixable++
	}
	resolved := false
	if o != nil {
		if t.Actions != nil {
			t.Actions[o.Action]++
		}
		resolved = o.Action == fix.Removed || o.Action == fix.Restored || o.Gone
	}
	if t.fail[v] && !resolved {
		t.Attention = true
	}
}

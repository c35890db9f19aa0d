package report

import (
	"fmt"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Unread is a directory the report does not cover: its path, and why.
type Unread struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// UnreadSummary says, in a clause, what the report does not cover, or ""
// when it covers everything: "1 directory could not be read (/srv/x:
// permission denied)".
func UnreadSummary(u []Unread) string {
	if len(u) == 0 {
		return ""
	}
	s := fmt.Sprintf("%d %s not read, so locks there were not seen (%s", len(u), plural(len(u), "directory was", "directories were"), ShellQuote(u[0].Path))
	if len(u) > 1 {
		s += fmt.Sprintf(" and %d more", len(u)-1)
	}
	return s + ")"
}

// Streams implements Sink: a Report renders once every lock is in.
func (r *Report) Streams() bool { return false }

// Lock implements Sink, collecting res and its outcome.
func (r *Report) Lock(res verdict.Result, o *fix.Outcome) {
	// The record bytes bound a removal to what was judged; judged and
	// acted on, the report needs them no more, and holding them for every
	// lock until the walk ends is a tenth of its memory.
	for i := range res.Lock.Holders {
		res.Lock.Holders[i].Raw = nil
	}
	for i := range res.Lock.Claims {
		res.Lock.Claims[i].Record.Raw = nil
	}
	if r.ahead != nil {
		r.lockAhead(res, o)
		return
	}
	r.Results = append(r.Results, &res)
	if o != nil {
		if r.Outcomes == nil {
			r.Outcomes = map[*scan.Lock]fix.Outcome{}
		}
		r.Outcomes[res.Lock] = *o
	}
}

// Streams implements Sink: a LineWriter writes each lock at once.
func (lw *LineWriter) Streams() bool { return true }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

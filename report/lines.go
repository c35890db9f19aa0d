package report

import (
	"encoding/json"
	"io"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/verdict"
)

// LineWriter writes --format json-lines: one JSON object per lock, on its own
// line, as each is judged ({"type":"lock", ...the fields of a lock in the
// JSON document...}), then one summary object ({"type":"summary", "version",
// "host", "boot_id", "time", "counts", "actions", "errors"}). It keeps only
// counts, so memory does not grow with the number of locks. It is not safe
// for concurrent use.
type LineWriter struct {
	w         io.Writer
	now       time.Time
	fail      map[verdict.Verdict]bool
	counts    map[verdict.Verdict]int
	actions   map[fix.Action]int
	attention bool
	err       error
}

// NewLineWriter returns a LineWriter writing to w. fail is the fail set, for
// NeedsAttention; fixing says whether actions are reported.
func NewLineWriter(w io.Writer, now time.Time, fail map[verdict.Verdict]bool, fixing bool) *LineWriter {
	lw := &LineWriter{w: w, now: now, fail: fail, counts: map[verdict.Verdict]int{}}
	for _, v := range verdict.All {
		lw.counts[v] = 0
	}
	if fixing {
		lw.actions = map[fix.Action]int{fix.Removed: 0, fix.Restored: 0, fix.Kept: 0, fix.Skipped: 0}
	}
	return lw
}

type lineLock struct {
	Type string `json:"type"`
	jsonLock
}

// Lock writes one judged lock, with what --fix did to it when o is not nil.
func (lw *LineWriter) Lock(res verdict.Result, o *fix.Outcome) {
	lw.counts[res.Verdict]++
	j := lockJSON(lw.now, res)
	resolved := false
	if o != nil {
		j.Action, j.ActionReason, j.Conflict = string(o.Action), o.Reason, o.Conflict
		lw.actions[o.Action]++
		resolved = o.Action == fix.Removed || o.Action == fix.Restored || o.Gone
	}
	if lw.fail[res.Verdict] && !resolved {
		lw.attention = true
	}
	lw.write(lineLock{Type: "lock", jsonLock: j})
}

func (lw *LineWriter) write(v any) {
	if lw.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		_, err = lw.w.Write(append(b, '\n'))
	}
	lw.err = err
}

// Summary writes the closing object and returns the first write error.
func (lw *LineWriter) Summary(host verdict.Host, errors []string) error {
	lw.write(struct {
		Type    string                  `json:"type"`
		Version int                     `json:"version"`
		Host    string                  `json:"host"`
		BootID  string                  `json:"boot_id"`
		Time    string                  `json:"time"`
		Counts  map[verdict.Verdict]int `json:"counts"`
		Actions map[fix.Action]int      `json:"actions,omitempty"`
		Errors  []string                `json:"errors"`
	}{"summary", Version, host.Name, host.BootID, lw.now.UTC().Format(time.RFC3339), lw.counts, lw.actions, append([]string{}, errors...)})
	return lw.err
}

// Counts returns how many locks got each verdict so far.
func (lw *LineWriter) Counts() map[verdict.Verdict]int { return lw.counts }

// NeedsAttention reports whether a lock written so far needs attention, as
// Report.NeedsAttention does.
func (lw *LineWriter) NeedsAttention() bool { return lw.attention }

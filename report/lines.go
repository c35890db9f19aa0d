package report

import (
	"bufio"
	"encoding/json"
	"io"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/verdict"
)

// LineWriter writes --format json-lines: one JSON object per lock, on its own
// line, as each is judged ({"type":"lock", ...the fields of a lock in the
// JSON document...}), then one summary object ({"type":"summary", "version",
// "host", "boot_id", "time", "counts", "actions", "errors", "not_locks"}). It keeps only
// counts, so memory does not grow with the number of locks. It is not safe
// for concurrent use.
type LineWriter struct {
	// w buffers the lines: one write per lock was a system call per lock.
	// It is flushed when full, at the first line written a second or more
	// after the last flush, at the summary, and under --fix after every
	// line.
	w       *bufio.Writer
	flushed time.Time
	fixing  bool
	now     time.Time
	tally   *Tally
	err     error
	// Only is as Report.Only.
	Only map[verdict.Verdict]bool
}

// NewLineWriter returns a LineWriter writing to w. fail is the fail set, for
// NeedsAttention; fixing says whether actions are reported.
func NewLineWriter(w io.Writer, now time.Time, fail map[verdict.Verdict]bool, fixing bool) *LineWriter {
	return &LineWriter{w: bufio.NewWriterSize(w, 64<<10), flushed: time.Now(), fixing: fixing, now: now, tally: NewTally(fail, fixing)}
}

type lineLock struct {
	Type string `json:"type"`
	jsonLock
}

// Lock writes one judged lock, with what --fix did to it when o is not nil.
func (lw *LineWriter) Lock(res verdict.Result, o *fix.Outcome) {
	lw.tally.Add(res, o)
	if !Shows(lw.Only, res.Verdict) {
		return
	}
	j := lockJSON(lw.now, res)
	if o != nil {
		j.Action, j.ActionReason, j.Conflict = string(o.Action), o.Reason, o.Conflict
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
	if t := time.Now(); err == nil && (lw.fixing || t.Sub(lw.flushed) > time.Second) {
		// Under --fix every line goes out at once: a line saying a lock
		// was removed must not be lost with a buffer when lockctl is
		// interrupted.
		err, lw.flushed = lw.w.Flush(), t
	}
	lw.err = err
}

// Summary writes the closing object, with the run's errors, the parts
// of the trees it did not read and the data files named like locks it
// passed by, and returns the first write error.
func (lw *LineWriter) Summary(host verdict.Host, errs []string, unread []Unread, notLocks []NotLock) error {
	lw.write(struct {
		Type     string                  `json:"type"`
		Version  int                     `json:"version"`
		Host     string                  `json:"host"`
		BootID   string                  `json:"boot_id"`
		Time     string                  `json:"time"`
		Counts   map[verdict.Verdict]int `json:"counts"`
		Actions  map[fix.Action]int      `json:"actions,omitempty"`
		Errors   []string                `json:"errors"`
		Complete bool                    `json:"complete"`
		Unread   []Unread                `json:"unread"`
		NotLocks []NotLock               `json:"not_locks"`
	}{"summary", Version, host.Name, host.BootID, lw.now.UTC().Format(time.RFC3339), lw.tally.Counts, lw.tally.Actions,
		append([]string{}, errs...), len(unread) == 0 && len(errs) == 0, append([]Unread{}, unread...), append([]NotLock{}, notLocks...)})
	if lw.err == nil {
		lw.err = lw.w.Flush()
	}
	return lw.err
}

// Tally counts the locks written so far, and what --fix did to them.
func (lw *LineWriter) Tally() *Tally { return lw.tally }

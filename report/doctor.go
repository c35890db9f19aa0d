package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Tally is what a doctor run counts: locks by verdict, --fix's actions, and
// whether any lock still needs attention. It is the one place that decides
// that a lock --fix removed or restored, or found already removed, no
// longer needs attention. It is not safe for concurrent use.
type Tally struct {
	Counts map[verdict.Verdict]int
	// Actions is nil unless the run fixes.
	Actions   map[fix.Action]int
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
func (t *Tally) Add(v verdict.Verdict, o *fix.Outcome) {
	t.Counts[v]++
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

// A Sink receives each lock of a doctor run once, judged, with what --fix
// did to it when the run fixes. Report collects them to sort and render at
// the end; LineWriter writes each at once. Doctor never calls Lock
// concurrently.
type Sink interface {
	Lock(res verdict.Result, o *fix.Outcome)
	// Streams says the sink writes each lock as it comes: Doctor then acts
	// on each as soon as it is judged, holding nothing. Otherwise it acts on
	// them once the walk is over, so that the walk never meets its own
	// claims.
	Streams() bool
}

// Options are what one doctor run is asked to do.
type Options struct {
	Host verdict.Host
	// Paths are the registries or locks to walk. Named says the operator
	// named them (as arguments or $LOCKCTL_PATH): one that cannot be read
	// is then an error, where a default place that is missing is skipped.
	Paths []string
	Named bool
	Match scan.Matcher
	// Workers is how many directories are walked at once.
	Workers int
	// Fixer, when not nil, acts on every judged lock (--fix), and removes
	// the abandoned builds beside it.
	Fixer *fix.Fixer
	// Warn is told of every problem that does not stop the run (an
	// unreadable subtree, a root that cannot be read), already recorded in
	// Result.Errors; Conflict of every claim --fix could not put back.
	Warn     func(err error, skipped bool)
	Conflict func(res verdict.Result, o fix.Outcome)
	// Progress, when not nil, is called once the walk starts with counters
	// that move while it runs, and the function it returns once it ends.
	Progress func(entries, found, judged *atomic.Int64) (stop func())
}

// Result is how a doctor run went, beyond what the sink was given.
type Result struct {
	// Errors are the problems that did not stop the run, as messages.
	Errors []string
	// Unread are the parts of the trees that were not read, or not in
	// full: the report does not cover them.
	Unread []Unread
	// BadRoot is true when a named path could not be read; Denied, when
	// permission was what stopped it.
	BadRoot bool
	Denied  bool
}

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

// Doctor walks opts.Paths, judges every lock it finds exactly as doctor
// does, acts on it with opts.Fixer when set, and hands it to sink. Each lock
// reaches the sink once (a lock found under two roots is judged once). It
// is the whole of lockctl doctor but for flags and printing.
func Doctor(opts Options, sink Sink) Result {
	var out Result
	note := func(err error, skipped bool) {
		out.Errors = append(out.Errors, Clean(err.Error()))
		var u *scan.UnreadError
		if errors.As(err, &u) {
			out.Unread = append(out.Unread, Unread{Path: u.Path, Error: Clean(err.Error())})
		}
		if errors.Is(err, fs.ErrPermission) {
			out.Denied = true
		}
		if opts.Warn != nil {
			opts.Warn(err, skipped)
		}
	}
	// Where the kernel's lock table is not the whole machine's, doctor asks
	// the one file for its POSIX and OFD locks, taking none, and a flock it
	// cannot see leaves a gone holder unknown; --fix, which acts, may take
	// the flock for an instant to see it (fix.New's judge does the same).
	judge := verdict.Judge{Host: opts.Host, Probe: &verdict.CachingProbe{Next: kernel.KernelProbe{}}, Evidence: &kernel.KernelEvidence{}, FileLocks: kernel.FileLocks{Take: opts.Fixer != nil}}
	act := func(res verdict.Result) *fix.Outcome {
		if opts.Fixer == nil {
			return nil
		}
		o := opts.Fixer.Fix(res)
		if n := opts.Fixer.Debris(res); n > 0 {
			o.Reason += fmt.Sprintf("; removed %d abandoned %s beside it", n, plural(n, "build", "builds"))
		}
		if o.Conflict != "" && opts.Conflict != nil {
			opts.Conflict(res, o)
		}
		return &o
	}
	var found, judged atomic.Int64
	var later []verdict.Result // judged, to act on after the walk
	seen := map[string]bool{}
	details := map[detailKey]*verdict.ProcDetail{}
	w := scan.Walker{
		Match:   opts.Match,
		Warn:    func(err error) { note(err, true) },
		Workers: opts.Workers,
		Found: func(l *scan.Lock) {
			found.Add(1)
			if seen[l.Path] {
				return
			}
			seen[l.Path] = true
			res := judge.Judge(l)
			judged.Add(1)
			addDetail(&res, details)
			if sink.Streams() || opts.Fixer == nil {
				sink.Lock(res, act(res))
				return
			}
			later = append(later, res)
		},
	}
	roots := resolveRoots(opts, func(err error) { out.BadRoot = true; note(err, false) })
	if opts.Progress != nil {
		stop := opts.Progress(&w.Entries, &found, &judged)
		defer stop()
	}
	for _, r := range roots {
		if err := w.Walk(r); err != nil {
			out.BadRoot = out.BadRoot || opts.Named
			note(fmt.Errorf("cannot read %s: %w", ShellQuote(r.Path), unwrapPath(err)), false)
		}
	}
	for _, res := range later {
		sink.Lock(res, act(res))
	}
	return out
}

// resolveRoots resolves opts.Paths, once each: a path that cannot be read
// is bad when named, and skipped otherwise.
func resolveRoots(opts Options, bad func(error)) []scan.Root {
	var roots []scan.Root
	for _, p := range opts.Paths {
		r, err := scan.ResolveRoot(p, opts.Match)
		if err != nil {
			if opts.Named {
				bad(fmt.Errorf("cannot read %s: %w", ShellQuote(p), unwrapPath(err)))
			}
			continue
		}
		dup := false
		for _, o := range roots {
			dup = dup || o.Same(r)
		}
		if !dup {
			roots = append(roots, r)
		}
	}
	return roots
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

// unwrapPath drops the *fs.PathError wrapper, whose path the message
// already names, quoted.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe == err {
		return pe.Err
	}
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// detailKey names one process for the run: a pid, with the start time its
// record fences it by (0 where none does).
type detailKey struct {
	pid   int64
	start uint64
}

// addDetail reads a live holder's command line and user, for the report,
// once per process in a run (details): a holder of thousands of locks is
// read once, and its detail is shared by their results.
func addDetail(res *verdict.Result, details map[detailKey]*verdict.ProcDetail) {
	if res.Verdict != verdict.Live {
		return
	}
	var k detailKey
	switch {
	case res.Holder != nil && res.Holder.Reserved:
		return // the reserver need not run, and its pid may be another's now
	case res.Holder != nil:
		k.pid = res.Holder.Pid
		if res.Holder.HasStart {
			k.start = res.Holder.Start
		}
	case len(res.Kernel) > 0:
		k.pid = int64(res.Kernel[0].Pid)
	}
	if k.pid <= 0 || k.pid > 1<<31-1 {
		return
	}
	d, ok := details[k]
	if !ok {
		d = kernel.Detail(int(k.pid))
		details[k] = d
	}
	res.Detail = d
}

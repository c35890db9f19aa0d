// Package doctor is the pipeline of lockctl doctor: it walks the
// registries (scan), judges every lock found once (verdict, with the judge
// internal/cli hands it), acts on it with --fix (fix), and hands each lock,
// judged and acted on, to a Sink that renders it (package report). It is
// the whole of lockctl doctor but for flags and printing.
package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/report"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// A Sink receives each lock of a doctor run once, judged, with what --fix
// did to it when the run fixes. report.Report collects them to sort and render
// at the end; report.LineWriter writes each at once. Run never calls Lock
// concurrently.
type Sink interface {
	Lock(res verdict.Result, o *fix.Outcome)
	// Streams says the sink writes each lock as it comes: Run then acts
	// on each as soon as it is judged, holding nothing. Otherwise it acts on
	// them once the walk is over, so that the walk never meets its own
	// claims.
	Streams() bool
}

// Options are what one doctor run is asked to do.
type Options struct {
	Host verdict.Host
	// Judge judges every lock found, once (judges.Doctor, handed in by
	// internal/cli). Nil fails closed: every lock is judged with
	// verdict.NoProbe, so no holder is gone and --fix removes nothing.
	Judge *verdict.Judge
	// Detail, when set, reads a live holder's command line and user for
	// the report (judges.Detail); nil reads none.
	Detail func(pid int) *verdict.ProcDetail
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
	// Via, when not nil, judges the foreign locks on their own hosts
	// (doctor --via): it is given them all once the walk ends, and returns
	// them judged.
	Via func([]verdict.Result) []verdict.Result
}

// Result is how a doctor run went, beyond what the sink was given.
type Result struct {
	// Errors are the problems that did not stop the run, as messages.
	Errors []string
	// Unread are the parts of the trees that were not read, or not in
	// full: the report does not cover them.
	Unread []report.Unread
	// BadRoot is true when a named path could not be read; Denied, when
	// permission was what stopped it.
	BadRoot bool
	Denied  bool
	// NotLocks are the data files named like locks that the walk passed
	// by (dependency manifests: scan.NotLock), each once. They were never
	// judged, never acted on, and never reached the sink.
	NotLocks []*scan.NotLock
}

// Run walks opts.Paths, judges every lock it finds exactly as doctor
// does, acts on it with opts.Fixer when set, and hands it to sink. Each lock
// reaches the sink once (a lock found under two roots is judged once). It
// is the whole of lockctl doctor but for flags and printing.
func Run(opts Options, sink Sink) Result {
	var out Result
	note := func(err error, skipped bool) {
		out.Errors = append(out.Errors, report.Clean(err.Error()))
		var u *scan.UnreadError
		if errors.As(err, &u) {
			out.Unread = append(out.Unread, report.Unread{Path: u.Path, Error: report.Clean(err.Error())})
		}
		if errors.Is(err, fs.ErrPermission) {
			out.Denied = true
		}
		if opts.Warn != nil {
			opts.Warn(err, skipped)
		}
	}
	// The run's judge: judges.Doctor says why it caches and what it asks
	// of the kernel.
	judge := opts.Judge
	if judge == nil {
		judge = &verdict.Judge{Host: opts.Host, Probe: verdict.NoProbe{}}
	}
	act := opts.act
	var found, judged atomic.Int64
	var later []verdict.Result   // judged, to act on after the walk
	var foreign []verdict.Result // for opts.Via
	seen := metPaths{}
	details := &procDetails{m: map[detailKey]*procDetail{}}
	var data notLocks
	w := scan.Walker{
		Match:   opts.Match,
		Warn:    func(err error) { note(err, true) },
		Workers: opts.Workers,
		NotLock: data.add, // a type of its own: never judged, acted on or sunk

		// Each lock is judged where it was read, side by side (a
		// judgement only asks the kernel: verdict.Judge is safe so); it
		// is reported and acted on one at a time.
		Judge: opts.judged(judge, details),
		FoundJudged: func(l *scan.Lock, v any) {
			found.Add(1)
			if !seen.first(l.Path) {
				return
			}
			res := v.(verdict.Result)
			judged.Add(1)
			if opts.Via != nil && res.Verdict == verdict.Foreign {
				foreign = append(foreign, res) // asked once the walk ends
				return
			}
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
			note(fmt.Errorf("cannot read %s: %w", report.ShellQuote(r.Path), unwrapPath(err)), false)
		}
	}
	for _, res := range append(later, opts.judgeForeign(foreign, details)...) {
		sink.Lock(res, act(res))
	}
	out.NotLocks = data.list
	return out
}

// metPaths are the lock paths a run has met: a lock under two roots (one
// inside the other) is judged once, and so would be one a walk of one
// directory met twice (it does not: TestWalkNamesEachLockOnce).
type metPaths map[string]bool

// first says whether path is met for the first time.
func (m metPaths) first(path string) bool {
	if m[path] {
		return false
	}
	m[path] = true
	return true
}

// judged judges a lock, and reads its live holder's detail, where the walk
// read it (both only ask the kernel: safe side by side). A foreign lock
// that opts.Via will judge gets its detail then.
func (opts Options) judged(judge *verdict.Judge, details *procDetails) func(*scan.Lock) any {
	return func(l *scan.Lock) any {
		res := judge.Judge(l)
		if opts.Via == nil || res.Verdict != verdict.Foreign {
			addDetail(&res, details, opts.Detail)
		}
		return res
	}
}

// act has opts.Fixer act on res, when it is set.
func (opts Options) act(res verdict.Result) *fix.Outcome {
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

// judgeForeign has opts.Via judge the foreign locks the walk held back,
// each on its own host.
func (opts Options) judgeForeign(foreign []verdict.Result, details *procDetails) []verdict.Result {
	if len(foreign) == 0 {
		return nil
	}
	out := opts.Via(foreign)
	for i := range out {
		addDetail(&out[i], details, opts.Detail)
	}
	return out
}

// notLocks gathers the data files a walk passes by, each once (a file
// under two roots is passed by twice). Not safe for concurrent use: the
// walk never calls NotLock concurrently.
type notLocks struct {
	seen map[string]bool
	list []*scan.NotLock
}

func (n *notLocks) add(l *scan.NotLock) {
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	if !n.seen[l.Path] {
		n.seen[l.Path] = true
		n.list = append(n.list, l)
	}
}

// resolveRoots resolves opts.Paths, once each: a path that cannot be read
// is bad when named, and skipped otherwise.
func resolveRoots(opts Options, bad func(error)) []scan.Root {
	var roots []scan.Root
	for _, p := range opts.Paths {
		r, err := scan.ResolveRoot(p, opts.Match)
		if err != nil {
			if opts.Named {
				bad(fmt.Errorf("cannot read %s: %w", report.ShellQuote(p), unwrapPath(err)))
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

// addDetail reads a live holder's command line and user (with read), for
// the report,
// once per process in a run (details): a holder of thousands of locks is
// read once, and its detail is shared by their results.
func addDetail(res *verdict.Result, details *procDetails, read func(int) *verdict.ProcDetail) {
	if res.Verdict != verdict.Live || read == nil {
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
	res.Detail = details.get(k, read)
}

// procDetails are the details read in a run, one per process, asked for
// by every walker at once: reading them under the walk's lock was a third
// of its serial part with 500 holders.
type procDetails struct {
	mu sync.Mutex
	m  map[detailKey]*procDetail
}

type procDetail struct {
	once sync.Once
	d    *verdict.ProcDetail
}

// get is k's detail, read with read the first time any walker asks.
func (ds *procDetails) get(k detailKey, read func(int) *verdict.ProcDetail) *verdict.ProcDetail {
	ds.mu.Lock()
	e := ds.m[k]
	if e == nil {
		e = &procDetail{}
		ds.m[k] = e
	}
	ds.mu.Unlock()
	e.once.Do(func() { e.d = read(int(k.pid)) })
	return e.d
}

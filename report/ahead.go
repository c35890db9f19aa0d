package report

import (
	"slices"
	"strings"
	"sync"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/verdict"
)

// EncodeAhead makes r encode each lock's JSON object as it comes (Lock), a
// batch of locks per goroutine, while the walk is still finding locks, and
// keep of each lock only its bytes, its verdict and path (for Sort) and its
// count (Tally). WriteJSON then only sorts and writes. Encoding once the
// walk had ended was a fifth of doctor --json's time at 20,000 locks, and
// every Result was kept for it. Only WriteJSON can write such a report:
// its Results stay empty.
func (r *Report) EncodeAhead() { r.ahead = &ahead{} }

// ahead is the state of a report that encodes ahead.
type ahead struct {
	tally   *Tally
	entries []*encoded
	batch   []pending // given to Lock, not yet handed to an encoder
	wg      sync.WaitGroup
	scratch sync.Pool // *[]byte: an encoder's buffer
	batches sync.Pool // *[]pending, emptied: a batch's room

	// The notes and premises met, kept once: a wedged registry's gone
	// locks repeat a few, and they were a third of what a report kept.
	mu     sync.Mutex
	shared map[string][]byte
}

// maxShared bounds the notes and premises kept once; others are kept
// with their lock.
const maxShared = 256

// intern is b as kept once, or nil when too many are kept already.
func (a *ahead) intern(b []byte) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.shared[string(b)]; ok {
		return s
	}
	if len(a.shared) >= maxShared {
		return nil
	}
	if a.shared == nil {
		a.shared = map[string][]byte{}
	}
	s := slices.Clone(b)
	a.shared[string(s)] = s
	return s
}

// encoded is one lock of such a report: its JSON object once encoded,
// json + shared + rest, shared being its notes and premises as interned.
type encoded struct {
	verdict            verdict.Verdict
	path               string
	json, shared, rest []byte
}

type pending struct {
	e   *encoded
	res verdict.Result
	o   *fix.Outcome
}

// aheadBatch locks are encoded by one goroutine: enough to pay for it.
const aheadBatch = 64

func (r *Report) lockAhead(res verdict.Result, o *fix.Outcome) {
	a := r.ahead
	if a.tally == nil {
		a.tally = NewTally(r.Fail, r.Outcomes != nil)
	}
	a.tally.Add(res, o)
	if !Shows(r.Only, res.Verdict) {
		return
	}
	if o != nil {
		c := *o
		o = &c
	}
	e := &encoded{verdict: res.Verdict, path: res.Lock.Path}
	a.entries = append(a.entries, e)
	a.batch = append(a.batch, pending{e, res, o})
	if len(a.batch) == aheadBatch {
		r.encodeBatch()
	}
}

// encodeBatch hands the pending locks to an encoder goroutine of their
// own. It never waits: Lock runs under the walk's lock (scan.Walker), so a
// wait here for a free encoder held up every walker.
func (r *Report) encodeBatch() {
	a := r.ahead
	if len(a.batch) == 0 {
		return
	}
	batch := a.batch
	if room, ok := a.batches.Get().(*[]pending); ok {
		a.batch = *room
	} else {
		a.batch = make([]pending, 0, aheadBatch)
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		buf, _ := a.scratch.Get().(*[]byte)
		if buf == nil {
			buf = new([]byte)
		}
		for _, p := range batch {
			j := lockJSON(r.Now, p.res)
			if p.o != nil {
				j.Action, j.ActionReason, j.Conflict = string(p.o.Action), p.o.Reason, p.o.Conflict
			}
			var from, to int
			*buf, from, to = appendLockJSONSpan((*buf)[:0], &j)
			p.e.json = nil
			if to-from >= 64 {
				if s := a.intern((*buf)[from:to]); s != nil {
					p.e.json, p.e.shared, p.e.rest = slices.Clone((*buf)[:from]), s, slices.Clone((*buf)[to:])
				}
			}
			if p.e.json == nil {
				p.e.json = slices.Clone(*buf)
			}
		}
		a.scratch.Put(buf)
		clear(batch) // holds no result for the collector to keep
		batch = batch[:0]
		a.batches.Put(&batch)
	}()
}

// finish encodes what is left and waits until every lock is encoded.
func (a *ahead) finish(r *Report) {
	r.encodeBatch()
	a.wg.Wait()
}

// sortAhead is Sort for a report that encodes ahead.
func (r *Report) sortAhead(rank map[verdict.Verdict]int) {
	r.ahead.finish(r)
	slices.SortStableFunc(r.ahead.entries, func(a, b *encoded) int {
		if ra, rb := rank[a.verdict], rank[b.verdict]; ra != rb {
			return ra - rb
		}
		return strings.Compare(a.path, b.path)
	})
}

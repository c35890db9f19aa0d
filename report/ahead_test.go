package report

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// TestEncodeAheadWritesTheSameReport: a report that encodes each lock as
// it comes (EncodeAhead, doctor --json) writes the bytes and keeps the
// tally of one that encodes once every lock is in: over many locks (more
// than every encoder's batch, and not a whole number of batches), in any
// order, with repeated paths, outcomes of --fix, and --only, and notes and
// premises repeated (kept once) or not.
func TestEncodeAheadWritesTheSameReport(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 4, 5, 0, time.UTC)
	fail := map[verdict.Verdict]bool{verdict.Gone: true, verdict.Unknown: true}
	for _, c := range []struct {
		name string
		n    int
		fix  bool
		only map[verdict.Verdict]bool
	}{
		{"none", 0, false, nil},
		{"one", 1, false, nil},
		{"many", 1000, false, nil},
		{"fix", 777, true, nil},
		{"only", 500, true, map[verdict.Verdict]bool{verdict.Gone: true, verdict.Live: true}},
	} {
		var results []verdict.Result
		var outcomes []*fix.Outcome
		x := uint64(c.n) + 7
		for i := 0; i < c.n; i++ {
			x = x*6364136223846793005 + 1442695040888963407
			v := verdict.All[(x>>33)%uint64(len(verdict.All))]
			res := verdict.Result{Lock: &scan.Lock{Path: fmt.Sprintf("/r/%03d.lock", (x>>40)%300), Kind: scan.KindFile, Format: scan.FormatPid},
				Verdict: v, Reason: fmt.Sprint("reason ", i), Holder: &scan.Holder{Pid: int64(i + 2), PidText: fmt.Sprint(i + 2)},
				Modified: now.Add(-time.Duration(i) * time.Second)}
			if v == verdict.Gone {
				res.Remove = []verdict.Step{{Op: verdict.OpRemove, Path: res.Lock.Path}}
				// Premises and notes that many locks share (kept once),
				// and some that are each lock's own.
				res.Facts = []verdict.Fact{{Premise: verdict.NoProcess, Source: "pidfd_open and every pid namespace"},
					{Premise: verdict.NoKernelLock, Source: "/proc/locks", Gap: fmt.Sprint("gap ", i%3)}}
				if i%5 == 0 {
					res.Facts[1].Gap = fmt.Sprint("a gap of this lock's own: ", i)
				}
			}
			if i%4 != 0 {
				res.Notes = []string{fmt.Sprint("a note shared by a quarter of the locks, and long enough to be kept once: ", i%4)}
			}
			var o *fix.Outcome
			if c.fix && i%3 == 0 {
				o = &fix.Outcome{Action: fix.Removed, Reason: fmt.Sprint("removed ", i)}
				if i%2 == 0 {
					o = &fix.Outcome{Action: fix.Kept, Reason: "kept", Conflict: "/r/claim"}
				}
			}
			results, outcomes = append(results, res), append(outcomes, o)
		}
		write := func(ahead bool) (string, *Tally) {
			r := &Report{Host: verdict.Host{Name: "h", BootID: "b"}, Now: now, Fail: fail, Only: c.only}
			if c.fix {
				r.Outcomes = map[*scan.Lock]fix.Outcome{}
			}
			if ahead {
				r.EncodeAhead()
			}
			for i, res := range results {
				if o := outcomes[i]; o != nil {
					r.Outcomes[res.Lock] = *o
				}
				r.Lock(res, outcomes[i])
			}
			r.Sort()
			var b bytes.Buffer
			if err := WriteJSON(&b, r); err != nil {
				t.Fatal(err)
			}
			return b.String(), r.Tally()
		}
		want, wantTally := write(false)
		got, gotTally := write(true)
		if got != want {
			t.Errorf("%s: encoded ahead, WriteJSON wrote\n%.2000s\nwant\n%.2000s", c.name, got, want)
		}
		if !reflect.DeepEqual(gotTally, wantTally) {
			t.Errorf("%s: encoded ahead, the tally is %+v, want %+v", c.name, gotTally, wantTally)
		}
	}
}

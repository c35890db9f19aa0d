package fix

import (
	"fmt"

	"github.com/lockctl/lockctl/internal/shellquote"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Rejudge judges a claimed record again on the host that judged its lock
// (doctor --fix --via): host is that host (Result.Remote), l the lock as
// judged, rec the claimed record (rec.File is the claim's name beside the
// lock, rec.Raw its bytes) and claim the claim's path. It must answer
// verdict.Gone only when that host, asked now, judged the file at claim,
// holding rec's bytes, gone; any failure (an unreachable host, a timeout,
// an answer from another host, a malformed answer) must be any other
// verdict. internal/remote's Via.Rejudge is the one lockctl uses.
type Rejudge func(host string, l *scan.Lock, rec scan.Record, claim string) verdict.Result

// sweepVia sweeps a lock judged gone on another host by the protocol of
// sweep, claiming it here, with one difference: the second judgement,
// which the removal rests on, is that host's, of the claimed record
// (f.Rejudge), since this host's would find it foreign again. Only a lock
// file that is its own record is swept so: its claim is the record itself,
// which the far end reads and judges as the lock at its path.
func (f *Fixer) sweepVia(res verdict.Result) Outcome {
	l := res.Lock
	switch {
	case res.Verdict != verdict.Gone:
		return skipped("--fix removes only gone locks and abandoned claims; this one is %s (judged on host %s)", res.Verdict, res.Remote)
	case l.Kind != scan.KindFile:
		return kept("judged on host %s: lockctl removes a %s lock of another host only where it is judged; run 'lockctl doctor --fix %s' on %s", res.Remote, l.Kind, shellquote.Quote(l.Path), res.Remote)
	}
	g := *f
	g.again = func(again *scan.Lock, c place) verdict.Result {
		if len(again.Holders) != 1 {
			return verdict.Result{Verdict: verdict.Unknown, Reason: "no claimed record to send"}
		}
		r := f.Rejudge(res.Remote, l, again.Holders[0], c.path())
		if r.Verdict != verdict.Gone {
			return r
		}
		// Its host's kernel covers its processes, never this host's,
		// which may lock the same file on a shared volume.
		switch held, doubt := f.Judge.LockedHere(again); {
		case held != "":
			return verdict.Result{Verdict: verdict.Live, Reason: fmt.Sprintf("gone on host %s, but on this host %s", res.Remote, held)}
		case doubt != "":
			return verdict.Result{Verdict: verdict.Unknown, Reason: fmt.Sprintf("gone on host %s, but whether a process of this host holds a lock on it cannot be told: %s", res.Remote, doubt)}
		}
		return r
	}
	return g.sweep(res)
}

// judgeAgain is step 3's judgement of the claimed record: this host's
// kernel asked afresh (Judge), or, for a lock judged on another host, that
// host asked again (again).
func (f *Fixer) judgeAgain(again *scan.Lock, c place) verdict.Result {
	if f.again != nil {
		return f.again(again, c)
	}
	return f.Judge.Judge(again)
}

package verdict

import (
	"cmp"
	"fmt"

	"github.com/lockctl/lockctl/scan"
)

// TempState is a producer's temporary file found with a lock
// (scan.Lock.Temps), judged: does the pid it carries run? It never
// changes the lock's verdict.
type TempState struct {
	Temp scan.Temp
	// State is the probe's answer for its pid, by the same rules as a
	// holder's (probeIn): StateUnknown for every doubt, a pid out of
	// range and a host that is not this one included.
	State State
	// Why says what the state rests on, or why it is not decided.
	Why string
}

// Inert says the producer that made the temporary is provably gone: its
// temporary is inert, and doctor --fix may remove it.
func (t TempState) Inert() bool { return t.State == StateAbsent || t.State == StateZombie }

// Word is how a report names its state: "gone", "running" or "unknown".
func (t TempState) Word() string {
	switch {
	case t.Inert():
		return "gone"
	case t.State == StateRunning:
		return "running"
	}
	return "unknown"
}

// temps judges the temporaries of l: on this host only (a temporary that
// names another host, or none when l's file system may be another
// machine's, is unknown), its pid by probeIn, as a holder's.
func (j *Judge) temps(l *scan.Lock) []TempState {
	if len(l.Temps) == 0 {
		return nil
	}
	out := make([]TempState, 0, len(l.Temps))
	for _, t := range l.Temps {
		out = append(out, j.JudgeTemp(l, t))
	}
	return out
}

// JudgeTemp judges the temporary t found with the lock l: the pid it
// carries, asked of the probe as a holder's pid is (probeIn), on this host
// only. A temporary that names another host (byte for byte, as GnuPG
// compares node names), or none where l's file system may be another
// machine's, is StateUnknown, as is a pid out of range.
func (j *Judge) JudgeTemp(l *scan.Lock, t scan.Temp) TempState {
	ts := TempState{Temp: t}
	if t.Host != "" && (j.Host.Name == "" || t.Host != j.Host.Name) {
		ts.Why = fmt.Sprintf("its name says host %s, and this is %s", t.Host, cmp.Or(j.Host.Name, "a host whose name cannot be read"))
		return ts
	}
	p := j.probeIn(t.Pid, "", l.FS.Remote)
	ts.State = p.State
	if p.Err != nil {
		ts.Why = p.Err.Error()
	}
	return ts
}

// onlyTemps judges a lock of which only its producer's temporaries
// remain: the lock is free (no file holds it), and each temporary whose
// producer is gone is inert (Result.Temps, doctor --fix removes those).
func (j *Judge) onlyTemps(r Result) Result {
	l := r.Lock
	gone, running := 0, 0
	for _, t := range r.Temps {
		switch {
		case t.Inert():
			gone++
		case t.State == StateRunning:
			running++
		}
		if r.Modified.IsZero() || t.Temp.Info.Mtime.Before(r.Modified) {
			r.Modified = t.Temp.Info.Mtime
		}
	}
	n := len(l.Temps)
	r.Verdict = Free
	r.Reason = fmt.Sprintf("no lock, only %d %s of %s's that it links to its lock: %d left by a pid that is gone, %d by one still running (taking the lock), %d undecided", n, plural(n, "temporary file", "temporary files"), l.Producer, gone, running, n-gone-running)
	return r
}

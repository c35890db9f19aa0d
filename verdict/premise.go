package verdict

import "fmt"

// Gone is a proof. A gone verdict concludes that the holder a lock names
// can never release it, and the conclusion rests on premises: no process
// has the pid, the pid is another process now, the record is of another
// boot, its pid namespace has ended, no process holds a kernel lock on it.
// Each premise comes from a source (the pid table, field 22 of
// /proc/<pid>/stat, the boot id, every process's ns/pid, the kernel's lock
// table, ...), and each source sees some part of the holder's world from
// this reader's view: the pid table of this pid namespace only, a lock
// table filtered by the namespace of the /proc it is read from, a boot id
// that is only a file, a start time in this reader's clock.
//
// This file is where a gone verdict is made, and the rule is one sentence:
// every premise must come from a source that covers the holder from this
// reader's view. A source that saw part of the picture (Fact.Gap) is a
// doubt, and a doubt is held: unknown, never gone. The judging code that
// finds a gap usually says so first, in words of its own (a namesake in
// another pid namespace, a time namespace that is not this reader's); proved
// is the net under it, and the one constructor of Gone (TestGoneOnlyProved).
// docs/verdicts.md ("Gone is a proof") lists every source, how its
// coverage is tested, and what partial coverage turns into.

// Premise is one fact a gone verdict rests on.
type Premise string

// The premises of gone.
const (
	NoProcess    Premise = "no process has the pid"
	Exited       Premise = "the process has exited"
	OtherProcess Premise = "the pid is another process now"
	NoNamesake   Premise = "no other pid namespace has the pid"
	OtherBoot    Premise = "the record is of another boot"
	EndedNS      Premise = "its pid namespace has ended"
	NoScope      Premise = "no pid namespace of this boot has its scope"
	Expired      Premise = "its reservation has ended"
	NoKernelLock Premise = "no process holds a kernel lock on it"
)

// Fact is one premise as one source gave it: Source names the source and
// how it covers the holder; Gap, when not empty, says in a clause what it
// could not see from this reader's view, and makes the premise a doubt.
type Fact struct {
	Premise Premise
	Source  string
	Gap     string
}

// Covers reports whether the source covers the holder from this reader's
// view.
func (f Fact) Covers() bool { return f.Gap == "" }

// proved concludes jd from facts: gone, with reason, when every premise
// came from a source that covers the holder; otherwise unknown, naming the
// first doubt. The facts go with the verdict either way (Result.Facts).
func proved(jd judged, reason string, facts ...Fact) judged {
	jd.facts = append(jd.facts, facts...)
	if why := doubt(jd.facts); why != "" {
		jd.v, jd.reason = Unknown, reason+", but "+why
		return jd
	}
	jd.v, jd.reason = Gone, reason
	return jd
}

// doubt says which of facts is a doubt, and why, or "" when none is.
func doubt(facts []Fact) string {
	for _, f := range facts {
		if !f.Covers() {
			return fmt.Sprintf("that %s is not proved: %s (%s)", f.Premise, f.Gap, f.Source)
		}
	}
	return ""
}

// reprove applies the rule again to a result whose facts grew after its
// holder was judged (a kernel lock asked about last): a gone result with a
// doubt among its facts is unknown, and removes nothing.
func (r Result) reprove() Result {
	if r.Verdict != Gone {
		return r
	}
	if why := doubt(r.Facts); why != "" {
		r.Verdict, r.Remove, r.Caveat = Unknown, nil, ""
		r.Reason += ", but " + why
	}
	return r
}

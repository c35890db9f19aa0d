package verdict

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// The rules of the programs whose locks lockctl knows, each the program's
// own, so that lockctl never breaks what the program itself would not
// (docs/formats.md). A format says what it can in its unit in package
// scan (scan/format_<name>.go); where its producer's rule needs the
// kernel's evidence, the unit's judgement side is rule_<name>.go here.

// producerRule is one producer's own rule, at the points of the judgement
// where it speaks; a nil hook says nothing there.
type producerRule struct {
	// lock judges the lock by the producer's rule alone, before any
	// record is looked at; decided false leaves it to the records (git's
	// lock records no holder).
	lock func(j *Judge, r Result) (res Result, decided bool)
	// holder decides a record before its pid is looked at.
	holder func(j *Judge, h *scan.Holder) (jd judged, decided bool)
	// after revisits the verdict on the record's pid.
	after func(j *Judge, h *scan.Holder, jd judged) judged
	// gone revisits a lock whose holder is gone.
	gone func(j *Judge, r Result) Result
	// noRecord judges a lock that holds no record; decided false leaves
	// it owner-less.
	noRecord func(r Result) (res Result, decided bool)
}

// rules has the rule of every format whose producer's rule needs the
// judge, keyed by the format's name (scan.FormatSpec.Name): each is
// registered by its file, rule_<format>.go, beside nothing else.
// TestEveryFormat checks that each names a registered format.
var rules = map[string]producerRule{}

// rule registers the format named unit's rule.
func rule(unit string, r producerRule) {
	if _, ok := rules[unit]; ok {
		panic("verdict: two rules for the format " + unit)
	}
	rules[unit] = r
}

// ruleOf is the rule of the format the lock l was read as (zero: none).
func ruleOf(l *scan.Lock) producerRule {
	if u := scan.UnitOf(l); u != nil {
		return rules[u.Name]
	}
	return producerRule{}
}

// producerLock applies l's producer's rule that judges the whole lock.
func (j *Judge) producerLock(r Result) (Result, bool) {
	if f := ruleOf(r.Lock).lock; f != nil {
		return f(j, r)
	}
	return r, false
}

// producerHolder applies a producer's rule that comes before any pid is
// looked at.
func (j *Judge) producerHolder(l *scan.Lock, h *scan.Holder) (judged, bool) {
	if f := ruleOf(l).holder; f != nil {
		return f(j, h)
	}
	return judged{}, false
}

// producerAfter applies a producer's rule to the verdict on its pid.
func (j *Judge) producerAfter(l *scan.Lock, h *scan.Holder, jd judged) judged {
	if f := ruleOf(l).after; f != nil {
		return f(j, h, jd)
	}
	return jd
}

// producerGone applies a producer's rule to a lock whose holder is gone.
func (j *Judge) producerGone(r Result) Result {
	if f := ruleOf(r.Lock).gone; f != nil {
		return f(j, r)
	}
	return r
}

// producerNoRecord applies a producer's rule to a lock with no record.
func (j *Judge) producerNoRecord(r Result) (Result, bool) {
	if f := ruleOf(r.Lock).noRecord; f != nil {
		return f(r)
	}
	return r, false
}

// ageText is a short, rounded age: "0s" for a time ahead of this clock.
func ageText(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return d.Round(time.Minute).String()
}

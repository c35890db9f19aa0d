// Package report runs doctor and renders what it finds. Doctor walks the
// registries (scan), judges each lock (verdict), acts on it when asked
// (fix) and hands it to a Sink: a Report, which sorts and renders text for
// people (styled on a terminal, plain and stable on a pipe), versioned JSON
// or Prometheus metrics at the end, or a LineWriter, which streams JSON
// lines. The rules are verdict's and the removals fix's; report decides
// only the order of a report and, in Tally, what still needs attention.
package report

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Version is the version of the JSON document.
const Version = 1

// Report is one run of doctor.
type Report struct {
	Host    verdict.Host
	Now     time.Time
	Results []*verdict.Result
	// Errors are the problems that did not stop the run (unreadable
	// subtrees, roots that could not be opened), as messages.
	Errors []string
	// Unread are the directories the report does not cover.
	Unread []Unread
	// NotLocks are the data files named like locks the run passed by
	// (NotLocks): counted in the summary, listed in the JSON, never
	// judged.
	NotLocks []NotLock
	// Fail is the set of verdicts that need attention.
	Fail map[verdict.Verdict]bool
	// Outcomes, set by doctor --fix, say what was done to each lock.
	Outcomes map[*scan.Lock]fix.Outcome
	// Only, when not nil, are the verdicts whose locks are written out
	// (--only); counts, the summary and attention still cover every lock.
	Only map[verdict.Verdict]bool

	ahead *ahead // EncodeAhead
}

// Shows reports whether a lock of verdict v is written out under only.
func Shows(only map[verdict.Verdict]bool, v verdict.Verdict) bool { return only == nil || only[v] }

// Tally counts the report's locks, and what --fix did to them.
func (r *Report) Tally() *Tally {
	if r.ahead != nil && r.ahead.tally != nil {
		return r.ahead.tally
	}
	t := NewTally(r.Fail, r.Outcomes != nil)
	for _, res := range r.Results {
		if o, ok := r.Outcomes[res.Lock]; ok {
			t.Add(*res, &o)
		} else {
			t.Add(*res, nil)
		}
	}
	return t
}

// Actions counts the outcomes of a --fix run, every action present.
func (r *Report) Actions() map[fix.Action]int {
	if a := r.Tally().Actions; a != nil {
		return a
	}
	return NewTally(nil, true).Actions
}

// Counts returns how many locks got each verdict, every verdict present.
func (r *Report) Counts() map[verdict.Verdict]int { return r.Tally().Counts }

// NeedsAttention reports whether any lock has a verdict in the fail set.
// A lock that --fix removed or restored, or found already removed, no
// longer does (Tally.Add).
func (r *Report) NeedsAttention() bool { return r.Tally().Attention }

// Sort puts locks that need attention first, then by verdict urgency, then
// by path, so output is stable from run to run.
func (r *Report) Sort() {
	rank := map[verdict.Verdict]int{}
	for i, v := range verdict.All {
		rank[v] = i
		if !r.Fail[v] {
			rank[v] += len(verdict.All) // the fail set first
		}
	}
	if r.ahead != nil {
		r.sortAhead(rank)
		return
	}
	// Sorted by key: a comparison that asked the map twice was a tenth of
	// doctor's time at 20,000 locks. Stable, so that two results of one
	// path keep the walk's order.
	type key struct {
		rank int
		path string
		res  *verdict.Result
	}
	keys := make([]key, len(r.Results))
	for i, res := range r.Results {
		keys[i] = key{rank[res.Verdict], res.Lock.Path, res}
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return strings.Compare(a.path, b.path)
	})
	for i := range keys {
		r.Results[i] = keys[i].res
	}
}

// Styles colours the text report. Build it with NewStyles from a renderer
// bound to the real writer, so a pipe or NO_COLOR gets plain text.
type Styles struct {
	verdict map[verdict.Verdict]lipgloss.Style
	path    lipgloss.Style
	label   lipgloss.Style
	// plain: the output takes no styling (not a terminal, NO_COLOR: the
	// renderer adds nothing to a styled word), so
	// render passes a one-line text through as it is, which is what
	// lipgloss would give back after a tenth of a text report's time at
	// 20,000 locks (TestRenderPlainIsLipgloss).
	plain bool
}

// NewStyles returns the styles for output going to w.
func NewStyles(w io.Writer) Styles {
	re := lipgloss.NewRenderer(w)
	colour := map[verdict.Verdict]string{
		verdict.Gone: "1", verdict.Claimed: "5", verdict.Recycled: "3", verdict.Ownerless: "3",
		verdict.Unknown: "3", verdict.Foreign: "4", verdict.Live: "2", verdict.Free: "2", verdict.Idle: "2",
	}
	s := Styles{verdict: map[verdict.Verdict]lipgloss.Style{}, path: re.NewStyle().Bold(true), label: re.NewStyle().Faint(true),
		plain: re.NewStyle().Bold(true).Faint(true).Foreground(lipgloss.Color("1")).Render("x") == "x"}
	for v, c := range colour {
		s.verdict[v] = re.NewStyle().Bold(true).Foreground(lipgloss.Color(c))
	}
	return s
}

// WriteText writes the report for a person: each lock with what it is, why,
// how old, and what to remove, then a summary line.
func WriteText(w io.Writer, r *Report, st Styles) error {
	// Written through a buffer a lock at a time: the whole report in one
	// string was most of a 20,000-lock report's memory.
	bw := bufio.NewWriterSize(w, 64<<10)
	var b strings.Builder
	for _, res := range r.Results {
		if !Shows(r.Only, res.Verdict) {
			continue
		}
		o, fixed := r.Outcomes[res.Lock]
		b.Reset()
		writeLock(&b, r.Now, *res, st, o, fixed)
		if _, err := bw.WriteString(b.String()); err != nil {
			return err
		}
	}
	b.Reset()
	for _, f := range SlotCounts(r.Results) {
		fmt.Fprintf(&b, "counting lock %s: %d of %d slots held\n", Clean(f.Path), f.Held, f.Slots)
	}
	b.WriteString(Summary(r))
	b.WriteString("\n")
	bw.WriteString(b.String())
	return bw.Flush()
}

// SlotFamily is one counting lock (--slots) as doctor found it: its path
// (slot 1's), how many slots its records say it has, and how many of them
// are held.
type SlotFamily struct {
	Path        string
	Slots, Held int
}

// SlotCounts are the counting locks among results, by path.
func SlotCounts(results []*verdict.Result) []SlotFamily {
	byPath := map[string]*SlotFamily{}
	var order []string
	for _, res := range results {
		h := res.Holder
		if h == nil || h.Slots < 2 || res.Lock == nil {
			continue
		}
		fam, _ := slotOf(res.Lock.Path)
		f := byPath[fam]
		if f == nil {
			f = &SlotFamily{Path: fam}
			byPath[fam] = f
			order = append(order, fam)
		}
		f.Slots = max(f.Slots, h.Slots)
		if res.Verdict != verdict.Gone && res.Verdict != verdict.Free {
			f.Held++
		}
	}
	sort.Strings(order)
	out := make([]SlotFamily, len(order))
	for i, p := range order {
		out[i] = *byPath[p]
	}
	return out
}

// slotOf is the counting lock a slot's path belongs to (slot 1's path),
// and the slot's number.
func slotOf(path string) (string, int) {
	lock, i := scan.SlotOf(filepath.Base(path))
	return filepath.Join(filepath.Dir(path), lock), i
}

func (st Styles) render(s lipgloss.Style, text string) string {
	if st.plain && !strings.ContainsAny(text, "\t\r\n") {
		return text
	}
	return s.Render(text)
}

// lockWhat is writeLock's "what" line: the lock's producer, format and
// kind, and when it was last modified.
func lockWhat(now time.Time, res verdict.Result) string {
	l := res.Lock
	what := fmt.Sprintf("%s, %s", l.Format, l.Kind)
	if l.Producer != "" && l.Producer != string(l.Format) {
		what = l.Producer + " lock: " + what
	}
	if !res.Modified.IsZero() {
		what += fmt.Sprintf(", modified %s (%s ago)", res.Modified.UTC().Format(time.RFC3339), Age(now.Sub(res.Modified)))
	}
	return what
}

// holderText is writeLock's "holder" line for the holder h its record
// names: pid, command, host, start and user, each where known.
func holderText(now time.Time, res verdict.Result, h *scan.Holder) string {
	hs := "pid " + Clean(h.PidText)
	if h.Reserved {
		hs = "reserved by pid " + Clean(h.PidText)
	}
	if h.PidText == "" {
		hs = fmt.Sprintf("pid %d", h.Pid)
	}
	if h.Command != "" {
		hs += ", command " + Clean(h.Command)
	}
	if h.Host != "" {
		hs += ", host " + Clean(h.Host)
	}
	if !res.Started.IsZero() {
		hs += ", process started " + res.Started.UTC().Format(time.RFC3339)
		if res.Verdict == verdict.Live {
			hs += " (running for " + Age(now.Sub(res.Started)) + ")"
		}
	}
	if d := res.Detail; d != nil && d.User != "" {
		hs += ", user " + Clean(d.User)
	}
	return hs
}

func writeLock(b *strings.Builder, now time.Time, res verdict.Result, st Styles, o fix.Outcome, fixed bool) {
	l := res.Lock
	word := fmt.Sprintf("%-9s", strings.ToUpper(string(res.Verdict)))
	fmt.Fprintf(b, "%s %s\n", st.render(st.verdict[res.Verdict], word), st.render(st.path, ShellQuote(l.Path)))
	line := func(label, text string) {
		fmt.Fprintf(b, "  %s %s\n", st.render(st.label, fmt.Sprintf("%-7s", label)), text)
	}
	line("what", lockWhat(now, res))
	line("why", Clean(res.Reason))
	if h := res.Holder; h != nil {
		line("holder", holderText(now, res, h))
		if h.Root != "" {
			line("root", "occupies "+Clean(h.Root)+" (a keyed lock: lockctl --root)")
		}
		if h.Slots > 1 {
			fam, i := slotOf(res.Lock.Path)
			line("slot", fmt.Sprintf("%d of %d of the counting lock %s", i, h.Slots, Clean(fam)))
		}
	} else if k := res.Kernel; res.Verdict == verdict.Live && len(k) > 0 && k[0].Pid > 0 {
		line("holder", kernelText(k[0]))
	}
	if d := res.Detail; d != nil && len(d.Cmdline) > 0 {
		q := make([]string, len(d.Cmdline))
		for i, a := range d.Cmdline {
			q[i] = ShellQuote(a)
		}
		line("cmdline", strings.Join(q, " "))
	}
	if n := len(res.Waiters); n > 0 {
		// Folded: the first few, and how many more ('lockctl why PID'
		// follows any one of them).
		var ws []string
		for i, w := range res.Waiters {
			if i == 3 && n > 4 {
				ws = append(ws, fmt.Sprintf("and %d more", n-i))
				break
			}
			ws = append(ws, kernelText(w))
		}
		text := "waited on by " + strings.Join(ws, "; ")
		if n > 1 {
			text = fmt.Sprintf("%d processes wait on it: %s", n, strings.Join(ws, "; "))
		}
		line("", text)
	}
	if fixed {
		line("action", fmt.Sprintf("%s: %s", o.Action, Clean(o.Reason)))
	}
	if cmd := FixCommand(res); cmd != "" && !fixed {
		line("fix", cmd+"   (claims, checks and judges again; the commands below are the last resort)")
	}
	if !fixed || (o.Action != fix.Removed && o.Action != fix.Restored) {
		// The lock's own remedy, then, apart, what others left beside it
		// (abandoned builds): a live lock has leftovers but no remedy.
		for _, part := range []struct {
			label string
			steps []verdict.Step
		}{{"remove", res.Remove}, {"debris", res.Debris}} {
			for i, c := range Commands(part.steps) {
				label := ""
				if i == 0 {
					label = part.label
				}
				line(label, c)
			}
		}
	}
	if res.Caveat != "" && (!fixed || o.Action != fix.Removed) {
		line("caveat", Clean(res.Caveat))
	}
	for _, t := range res.Temps {
		line("temp", TempText(t))
	}
	for _, n := range res.Notes {
		line("note", Clean(n))
	}
	b.WriteString("\n")
}

// TempText is the line a report gives a producer's temporary file:
// "<name> left by pid N (gone|running|unknown: why)".
func TempText(t verdict.TempState) string {
	s := fmt.Sprintf("%s left by pid %d", ShellQuote(t.Temp.Name), t.Temp.Pid)
	if t.Temp.Host != "" {
		s += " on " + Clean(t.Temp.Host)
	}
	if t.Word() == "unknown" && t.Why != "" {
		return s + " (unknown: " + Clean(t.Why) + ")"
	}
	return s + " (" + t.Word() + ")"
}

// FixCommand is the command that removes res's lock safely, or "" when
// --fix would not: lockctl doctor --fix on that very lock.
func FixCommand(res verdict.Result) string {
	if res.Verdict != verdict.Gone && (res.Verdict != verdict.Claimed || len(res.Remove) == 0) {
		return ""
	}
	if len(res.Remove) == 0 || res.Holder != nil && res.Holder.Break == "no" {
		return ""
	}
	return "lockctl doctor --fix " + ShellQuote(res.Lock.Path)
}

// kernelText names a holder or waiter of a kernel lock.
func kernelText(h verdict.KernelHolder) string {
	s := "the taker has exited"
	if h.Pid > 0 {
		s = fmt.Sprintf("pid %d", h.Pid)
	}
	if h.Comm != "" {
		s += ", command " + Clean(h.Comm)
	}
	if t := lockTypes[h.How]; t != "" {
		s += ", " + t
		if h.Mode != "" {
			s += " " + h.Mode
		}
	}
	return s
}

// removal is everything due for removal at a lock: its remedy, then the
// abandoned builds beside it.
func removal(res verdict.Result) []verdict.Step {
	return append(append([]verdict.Step{}, res.Remove...), res.Debris...)
}

// Summary is the one-line count of locks by verdict.
func Summary(r *Report) string {
	partial := UnreadSummary(r.Unread)
	data := notLocksClause(len(r.NotLocks))
	if len(r.Results) == 0 {
		out := "no locks found"
		if partial != "" {
			out = "no locks found where it could look, but " + partial
		}
		if data != "" {
			out += "; " + data
		}
		return out
	}

	c := r.Counts()
	var parts []string
	for _, v := range verdict.All {
		if c[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[v], v))
		}
	}
	noun := "locks"
	if len(r.Results) == 1 {
		noun = "lock"
	}
	out := fmt.Sprintf("%d %s: %s", len(r.Results), noun, strings.Join(parts, ", "))
	if data != "" {
		out += "; " + data
	}
	if partial != "" {
		out += "; incomplete: " + partial
	}
	if r.Outcomes != nil {
		a := r.Actions()
		out += fmt.Sprintf("\nfix: %d removed, %d restored, %d kept, %d skipped", a[fix.Removed], a[fix.Restored], a[fix.Kept], a[fix.Skipped])
	}
	return out
}

// Age renders a duration the way an operator reads it: 45s, 12m, 3h20m, 4d2h.
func Age(d time.Duration) string {
	if d < 0 {
		return "in the future"
	}
	s := int64(d.Seconds())
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 86400:
		return fmt.Sprintf("%dh%dm", s/3600, s%3600/60)
	}
	if s < 3*86400 {
		return fmt.Sprintf("%dd%dh", s/86400, s%86400/3600)
	}
	return fmt.Sprintf("%dd", s/86400)
}

package why

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Text writes the report as one indented tree per process asked about,
// then where its chains end. clean makes a name safe for a terminal.
func Text(w io.Writer, r *Report, clean func(string) string) {
	t := &texter{w: w, clean: clean}
	for i, p := range r.Processes {
		if i > 0 {
			fmt.Fprintln(w)
		}
		t.proc(p, 0, "")
	}
	if len(r.Processes) > 0 {
		fmt.Fprintln(w)
	}
	if len(r.Ends) == 0 {
		fmt.Fprintln(w, "no lock wait found")
		return
	}
	for _, e := range r.Ends {
		fmt.Fprintf(w, "ends: %s: %s\n", e.Kind, clean(e.Why))
	}
}

type texter struct {
	w     io.Writer
	clean func(string) string
}

func (t *texter) line(depth int, format string, args ...any) {
	fmt.Fprintf(t.w, "%s%s\n", strings.Repeat("  ", depth), fmt.Sprintf(format, args...))
}

// who names a process, with its pids in the namespaces below the reader's.
func who(p *Proc, clean func(string) string) string {
	s := "pid " + strconv.Itoa(p.Pid)
	if len(p.NSPids) > 0 {
		var ns []string
		for _, n := range p.NSPids {
			ns = append(ns, strconv.Itoa(n))
		}
		s += " (pid " + strings.Join(ns, ", ") + " in its container"
		if p.PidNS != "" {
			s += " " + p.PidNS
		}
		s += ")"
	}
	return s + " (" + clean(p.Command) + ")"
}

func (t *texter) proc(p *Proc, depth int, role string) {
	name := who(p, t.clean)
	if role != "" {
		name = role + " " + name
	}
	switch {
	case p.Cycle:
		t.line(depth, "%s: a deadlock: it is already on this chain", name)
		return
	case p.Doubt != "" && p.Doing == "" && len(p.Waits) == 0:
		t.line(depth, "%s: doubt: %s", name, t.clean(p.Doubt))
	default:
		t.line(depth, "%s: %s", name, t.clean(p.Doing))
		if p.Doubt != "" {
			t.line(depth+1, "doubt: %s", t.clean(p.Doubt))
		}
	}
	for _, wt := range p.Waits {
		t.wait(wt, depth+1)
	}
	for _, c := range p.Children {
		t.proc(c, depth+1, "")
	}
	if p.Quiet > 0 && (len(p.Children) > 0 || len(p.Waits) > 0 || depth == 0) {
		t.line(depth+1, "(%d other %s, in no lock wait)", p.Quiet, plural(p.Quiet, "child", "children"))
	}
}

func (t *texter) wait(wt *Wait, depth int) {
	thread := ""
	if wt.Tid != 0 {
		thread = fmt.Sprintf("thread %d ", wt.Tid)
	}
	mode := wt.Mode
	switch wt.How {
	case "lockctl":
		t.line(depth, "%swaits for the lock %s (lockctl's own wait)", thread, t.clean(wt.Path))
	default:
		table := "; /proc/locks shows the blocked request"
		if !wt.InTable {
			table = "; /proc/locks does not show it (yet)"
		}
		call := map[string]string{"flock": "flock(2)", "POSIX lock": "fcntl(F_SETLKW)", "OFD lock": "fcntl(F_OFD_SETLKW)"}[wt.How]
		t.line(depth, "%swaits in %s for %s on %s%s", thread, call, article(mode+" "+wt.How), t.clean(wt.Path), table)
	}
	if wt.Verdict != "" {
		t.line(depth+1, "lock: %s: %s", strings.ToUpper(wt.Verdict), t.clean(wt.Reason))
	}
	for _, h := range wt.Holders {
		t.proc(h, depth+1, "held by")
	}
	if wt.Fix != "" {
		t.line(depth+1, "fix: %s", t.clean(wt.Fix))
	}
	if len(wt.Holders) == 0 && wt.EndWhy != "" {
		t.line(depth+1, "%s: %s", wt.End, t.clean(wt.EndWhy))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// article puts "a" or "an" before a noun phrase.
func article(s string) string {
	s = strings.TrimSpace(s)
	if s != "" && strings.ContainsRune("aeiouAEIOU", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

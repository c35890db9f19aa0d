package report

import (
	"io"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/verdict"
	"github.com/mattn/go-runewidth"
)

// WriteTable writes the report one line per lock, lslocks-style, for a
// screen of thousands of locks: verdict, holder pid and command, the
// lock's age, what it is, its path, and with --fix what was done; then
// the summary. The reasons and remedies are in the text and JSON forms.
func WriteTable(w io.Writer, r *Report, st Styles) error {
	head := []string{"VERDICT", "PID", "COMMAND", "AGE", "WHAT", "PATH"}
	if r.Outcomes != nil {
		head = append(head, "ACTION")
	}
	rows := [][]string{head}
	var verdicts []verdict.Verdict
	for _, res := range r.Results {
		if !Shows(r.Only, res.Verdict) {
			continue
		}
		pid, cmd := "-", "-"
		switch h := res.Holder; {
		case h != nil:
			pid = Clean(h.PidText)
			if pid == "" {
				pid = strconv.FormatInt(h.Pid, 10)
			}
			if h.Command != "" {
				cmd = Clean(h.Command)
			}
		case len(res.Kernel) > 0 && res.Kernel[0].Pid > 0:
			pid, cmd = strconv.Itoa(res.Kernel[0].Pid), Clean(res.Kernel[0].Comm)
		}
		if d := res.Detail; d != nil && d.Comm != "" && cmd == "-" {
			cmd = Clean(d.Comm)
		}
		age := "-"
		if !res.Modified.IsZero() {
			age = Age(r.Now.Sub(res.Modified))
		}
		l := res.Lock
		what := string(l.Format)
		if l.Producer != "" {
			what = l.Producer
		}
		row := []string{string(res.Verdict), pid, cmd, age, what + "/" + string(l.Kind), ShellQuote(l.Path)}
		if r.Outcomes != nil {
			act := "-"
			if o, ok := r.Outcomes[l]; ok {
				act = string(o.Action)
			}
			row = append(row, act)
		}
		rows = append(rows, row)
		verdicts = append(verdicts, res.Verdict)
	}
	width := make([]int, len(head))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], runewidth.StringWidth(c))
		}
	}
	var b strings.Builder
	if len(rows) > 1 {
		for n, row := range rows {
			for i, c := range row {
				last := i == len(row)-1
				cell := c
				if !last {
					cell += strings.Repeat(" ", width[i]-runewidth.StringWidth(c)+2)
				}
				switch {
				case n == 0:
					cell = st.render(st.label, cell)
				case i == 0:
					cell = st.render(st.verdict[verdicts[n-1]], cell)
				}
				b.WriteString(cell)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(Summary(r))
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

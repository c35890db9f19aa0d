package report

import (
	"strconv"
	"unicode/utf8"
)

// appendLockJSON appends j as json.MarshalIndent(j, "    ", "  ") writes
// it. encoding/json's reflection and its indenting pass were a tenth of
// doctor --json's time at 20,000 locks. TestLockJSONMatchesEncodingJSON
// fills every field of jsonLock and jsonHolder, by reflection, and holds
// the two equal, so a field added to either struct and not here fails it.
func appendLockJSON(b []byte, j *jsonLock) []byte {
	b, _, _ = appendLockJSONSpan(b, j)
	return b
}

// appendLockJSONSpan is appendLockJSON, saying where the lock's notes and
// premises lie in what it appended: b[from:to], bytes that most locks of
// one kind share (a gone pid file's are 800 of its 1,300).
func appendLockJSONSpan(b []byte, j *jsonLock) (out []byte, from, to int) {
	var levels [8]int // deep enough for a lock: none grows on the heap
	o := jsonOut{b: b, prefix: "    ", n: levels[:0]}
	o.begin('{')
	o.str("path", j.Path)
	o.strOmit("path_shell", j.PathShell)
	o.str("kind", j.Kind)
	o.str("format", j.Format)
	o.strOmit("producer", j.Producer)
	o.str("verdict", j.Verdict)
	o.str("reason", j.Reason)
	o.key("holder")
	if j.Holder == nil {
		o.b = append(o.b, "null"...)
	} else {
		o.holder(j.Holder)
	}
	o.strOmit("modified", j.Modified)
	o.key("age_seconds")
	if j.AgeSeconds == nil {
		o.b = append(o.b, "null"...)
	} else {
		o.b = strconv.AppendInt(o.b, *j.AgeSeconds, 10)
	}
	o.strs("remove", j.Remove, false)
	o.strOmit("fix", j.Fix)
	o.strOmit("caveat", j.Caveat)
	from = len(o.b)
	o.strs("notes", j.Notes, true)
	if len(j.Premises) > 0 {
		o.key("premises")
		o.begin('[')
		for _, p := range j.Premises {
			o.elem()
			o.begin('{')
			o.str("premise", p.Premise)
			o.str("source", p.Source)
			o.key("covered")
			o.b = strconv.AppendBool(o.b, p.Covered)
			o.strOmit("gap", p.Gap)
			o.end('}')
		}
		o.end(']')
	}
	to = len(o.b)
	if len(j.Waiters) > 0 {
		o.key("waiters")
		o.begin('[')
		for i := range j.Waiters {
			o.elem()
			o.holder(&j.Waiters[i])
		}
		o.end(']')
	}
	if len(j.Temps) > 0 {
		o.key("temps")
		o.begin('[')
		for _, t := range j.Temps {
			o.elem()
			o.begin('{')
			o.str("name", t.Name)
			o.key("pid")
			o.b = strconv.AppendInt(o.b, t.Pid, 10)
			o.strOmit("host", t.Host)
			o.str("state", t.State)
			o.strOmit("why", t.Why)
			o.end('}')
		}
		o.end(']')
	}
	o.strOmit("action", j.Action)
	o.strOmit("action_reason", j.ActionReason)
	o.strOmit("conflict", j.Conflict)
	o.end('}')
	return o.b, from, to
}

func (o *jsonOut) holder(h *jsonHolder) {
	o.begin('{')
	o.key("pid")
	o.b = strconv.AppendInt(o.b, h.Pid, 10)
	o.strOmit("host", h.Host)
	o.strOmit("command", h.Command)
	o.strOmit("token", h.Token)
	o.strOmit("start", h.Start)
	if h.StartTicks != nil {
		o.key("start_ticks")
		o.b = strconv.AppendUint(o.b, *h.StartTicks, 10)
	}
	o.strOmit("lock_type", h.LockType)
	o.strOmit("lock_mode", h.LockMode)
	o.strs("cmdline", h.Cmdline, true)
	o.strOmit("user", h.User)
	if h.Uid != nil {
		o.key("uid")
		o.b = strconv.AppendInt(o.b, int64(*h.Uid), 10)
	}
	o.strOmit("started", h.Started)
	o.strOmit("reserved_until", h.ReservedUntil)
	o.strOmit("root", h.Root)
	if h.Slots != 0 {
		o.key("slots")
		o.b = strconv.AppendInt(o.b, int64(h.Slots), 10)
	}
	o.end('}')
}

// jsonOut writes indented JSON: each element on a line of its own, after
// prefix and two spaces for each level, as json.MarshalIndent does.
type jsonOut struct {
	b      []byte
	prefix string
	n      []int // elements written at each open level
}

func (o *jsonOut) newline() {
	o.b = append(o.b, '\n')
	o.b = append(o.b, o.prefix...)
	for range len(o.n) {
		o.b = append(o.b, "  "...)
	}
}

func (o *jsonOut) begin(c byte) {
	o.b = append(o.b, c)
	o.n = append(o.n, 0)
}

// elem starts the next element of the innermost object or array.
func (o *jsonOut) elem() {
	if o.n[len(o.n)-1] > 0 {
		o.b = append(o.b, ',')
	}
	o.n[len(o.n)-1]++
	o.newline()
}

// end closes the innermost level: an empty one stays on its line.
func (o *jsonOut) end(c byte) {
	k := o.n[len(o.n)-1]
	o.n = o.n[:len(o.n)-1]
	if k > 0 {
		o.newline()
	}
	o.b = append(o.b, c)
}

func (o *jsonOut) key(k string) {
	o.elem()
	o.b = appendJSONString(o.b, k)
	o.b = append(o.b, ':', ' ')
}

func (o *jsonOut) str(k, v string) {
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

func (o *jsonOut) strOmit(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

// strs writes a []string: null when nil, unless omitempty leaves it out
// with an empty one.
func (o *jsonOut) strs(k string, vs []string, omitempty bool) {
	if omitempty && len(vs) == 0 {
		return
	}
	o.key(k)
	if vs == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.begin('[')
	for _, v := range vs {
		o.elem()
		o.b = appendJSONString(o.b, v)
	}
	o.end(']')
}

// appendJSONString appends s quoted as json.Marshal quotes a string: with
// <, > and & escaped, invalid UTF-8 as U+FFFD, and U+2028 and U+2029
// escaped. FuzzJSONString holds it equal to json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

package report

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lockctl/lockctl/verdict"
)

// ShellQuote quotes s for a POSIX-like shell so that it survives being
// pasted: unquoted when it holds only safe characters, in single quotes when
// it holds spaces, quotes or other printable characters, and in bash's $'...'
// form, with every control character and invalid byte escaped, otherwise.
// The result never contains a raw control character, so printing it to a
// terminal is safe too.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe, printable := true, true
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf { // ASCII, as nearly every path is
			if !shellSafe[c] {
				safe = false
				printable = printable && c >= 0x20 && c != 0x7f
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1, isControl(r):
			printable = false
			safe = false
		case !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)):
			safe = false
		}
		i += n
	}
	if safe {
		return s
	}
	if printable {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1, isControl(r):
			for k := 0; k < n; k++ {
				fmt.Fprintf(&b, `\x%02x`, s[i+k])
			}
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteString("'")
	return b.String()
}

// shellSafe are the ASCII bytes a shell word may hold unquoted.
var shellSafe = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_@%+=:,./-", rune(c))
	}
	return t
}()

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' ||
		(r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
}

// Clean makes s safe to print on a terminal line: control characters,
// bidirectional overrides and invalid bytes become \xNN or \u escapes.
func Clean(s string) string {
	ok := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || isControl(r) {
			ok = false
			break
		}
		i += n
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isControl(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case isControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Commands renders a remedy as shell commands, one per step, in order.
func Commands(steps []verdict.Step) []string {
	out := make([]string, 0, len(steps))
	for _, s := range steps {
		switch s.Op {
		case verdict.OpRemove:
			out = append(out, "rm -- "+ShellQuote(s.Path))
		case verdict.OpRmdir:
			out = append(out, "rmdir -- "+ShellQuote(s.Path))
		case verdict.OpRestore:
			// ln fails if anything stands at the target: it never replaces.
			out = append(out, "ln -- "+ShellQuote(s.Path)+" "+ShellQuote(s.To)+" && rm -- "+ShellQuote(s.Path))
		}
	}
	return out
}

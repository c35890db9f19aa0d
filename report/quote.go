package report

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lockctl/lockctl/internal/shellquote"
	"github.com/lockctl/lockctl/verdict"
)

// ShellQuote quotes s for a POSIX-like shell so that it survives being
// pasted (shellquote.Quote): unquoted when it holds only safe characters,
// in single quotes when it holds spaces, quotes or other printable
// characters, and in bash's $'...' form, with every control character and
// invalid byte escaped, otherwise. The result never contains a raw control
// character, so printing it to a terminal is safe too.
func ShellQuote(s string) string { return shellquote.Quote(s) }

func isControl(r rune) bool { return shellquote.IsControl(r) }

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

// Package shellquote quotes a word for a POSIX-like shell so that a
// command lockctl prints, pasted, names the very bytes it names: every
// package that suggests a command (report, lock) quotes with it.
package shellquote

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Quote quotes s for a POSIX-like shell so that it survives being
// pasted: unquoted when it holds only safe characters, in single quotes when
// it holds spaces, quotes or other printable characters, and in bash's $'...'
// form, with every control character and invalid byte escaped, otherwise.
// The result never contains a raw control character, so printing it to a
// terminal is safe too.
func Quote(s string) string {
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
		case r == utf8.RuneError && n == 1, IsControl(r):
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
		case r == utf8.RuneError && n == 1, IsControl(r):
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

// IsControl reports whether r must never reach a terminal raw: C0 and C1
// controls, DEL, and the Unicode line separators and bidirectional
// overrides.
func IsControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' ||
		(r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
}

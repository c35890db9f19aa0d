package report_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lockctl/lockctl/report"
)

func TestShellQuote(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "''"},
		{"safe word", "abc", "abc"},
		{"safe path", "/var/lock/LCK..ttyS0", "/var/lock/LCK..ttyS0"},
		{"safe punctuation", "a_b@c%d+e=f:g,h.i/j-k", "a_b@c%d+e=f:g,h.i/j-k"},
		{"space", "/tmp/my lock", "'/tmp/my lock'"},
		{"single quote", "it's", `'it'\''s'`},
		{"only quotes", "''", `''\'''\'''`},
		{"dollar", "$HOME", "'$HOME'"},
		{"command substitution", "$(id)`id`", "'$(id)`id`'"},
		{"glob", "*.lock", "'*.lock'"},
		{"tilde", "~root", "'~root'"},
		{"backslash", `a\b`, `'a\b'`},
		{"double quote", `a"b`, `'a"b'`},
		{"history", "a!!b", "'a!!b'"},
		{"utf-8", "é.lock", "'é.lock'"},
		{"newline", "a\nb", `$'a\x0ab'`},
		{"tab", "a\tb", `$'a\x09b'`},
		{"escape", "\x1b[31mred.lock", `$'\x1b[31mred.lock'`},
		{"delete", "a\x7f", `$'a\x7f'`},
		{"invalid byte", "a\xffb", `$'a\xffb'`},
		{"truncated utf-8", "a\xe2\x80", `$'a\xe2\x80'`},
		{"C1 CSI", "a\u009bb", `$'a\xc2\x9bb'`},
		{"bidi override", "\u202egnp.lock", `$'\xe2\x80\xaegnp.lock'`},
		{"bidi isolate", "\u2066x", `$'\xe2\x81\xa6x'`},
		{"line separator", "a\u2028b", `$'a\xe2\x80\xa8b'`},
		{"control with quote and backslash", "a'\nb\\", `$'a\'\x0ab\\'`},
		{"control then hex digit", "\x1bf", `$'\x1bf'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := report.ShellQuote(tt.in)
			if got != tt.want {
				t.Errorf("ShellQuote(%q) = %s, want %s", tt.in, got, tt.want)
			}
			checkTerminalSafe(t, "ShellQuote", tt.in, got)
		})
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain text", "plain text"},
		{"é 日本", "é 日本"},
		{"a\nb", `a\x0ab`},
		{"\x1b[31mred", `\x1b[31mred`},
		{"\x7f", `\x7f`},
		{"\xff", `\xff`},
		{"\u009b", `\u009b`},
		{"\u202egnp", `\u202egnp`},
		{"\u2029", `\u2029`},
		{"ok\r", `ok\x0d`},
	}
	for _, tt := range tests {
		got := report.Clean(tt.in)
		if got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
		checkTerminalSafe(t, "Clean", tt.in, got)
	}
}

// isDangerous reports whether r must never reach a terminal raw: C0 and C1
// controls, DEL, line and paragraph separators, and bidirectional
// embeddings, overrides and isolates.
func isDangerous(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// checkTerminalSafe asserts that out, made from in by fn, is valid UTF-8
// without a byte below 0x20, DEL, or any other dangerous character.
func checkTerminalSafe(t *testing.T, fn, in, out string) {
	t.Helper()
	for i := 0; i < len(out); i++ {
		if out[i] < 0x20 || out[i] == 0x7f {
			t.Fatalf("%s(%q) = %q contains control byte %#x", fn, in, out, out[i])
		}
	}
	if !utf8.ValidString(out) {
		t.Fatalf("%s(%q) = %q is not valid UTF-8", fn, in, out)
	}
	for _, r := range out {
		if isDangerous(r) {
			t.Fatalf("%s(%q) = %q contains %U", fn, in, out, r)
		}
	}
}

func isSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_@%+=:,./-", c) >= 0
}

// unquote is a model of how bash reads what ShellQuote writes: unquoted
// safe characters, single-quoted runs joined by a backslash-escaped quote,
// and $'...' with \xHH, \\ and \'. It refuses anything else, so ShellQuote
// can only pass by writing those forms. The model itself is checked against
// bash by the round trip tests.
func unquote(q string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(q); {
		switch {
		case strings.HasPrefix(q[i:], "$'"):
			i += 2
		ansi:
			for {
				if i >= len(q) {
					return "", fmt.Errorf("unterminated $'")
				}
				switch c := q[i]; c {
				case '\'':
					i++
					break ansi
				case '\\':
					if i+1 >= len(q) {
						return "", fmt.Errorf("trailing backslash")
					}
					switch q[i+1] {
					case '\\', '\'':
						b.WriteByte(q[i+1])
						i += 2
					case 'x':
						if i+4 > len(q) {
							return "", fmt.Errorf("short \\x")
						}
						v, err := strconv.ParseUint(q[i+2:i+4], 16, 8)
						if err != nil {
							return "", fmt.Errorf("bad \\x%s", q[i+2:i+4])
						}
						b.WriteByte(byte(v))
						i += 4
					default:
						return "", fmt.Errorf("unexpected escape \\%c", q[i+1])
					}
				default:
					b.WriteByte(c)
					i++
				}
			}
		case q[i] == '\'':
			j := strings.IndexByte(q[i+1:], '\'')
			if j < 0 {
				return "", fmt.Errorf("unterminated '")
			}
			b.WriteString(q[i+1 : i+1+j])
			i += j + 2
		case q[i] == '\\' && i+1 < len(q) && q[i+1] == '\'':
			b.WriteByte('\'')
			i += 2
		case isSafe(q[i]):
			b.WriteByte(q[i])
			i++
		default:
			return "", fmt.Errorf("unquoted %q at %d", q[i], i)
		}
	}
	return b.String(), nil
}

// quoteSeeds are the round-trip inputs and FuzzShellQuote's seed corpus.
var quoteSeeds = []string{
	"", "abc", "/var/lock/LCK..ttyS0", "/run/user/1000/app.lock", "teams/alpha/.config.lock",
	"a b", "it's", "'", "''", "'''", `\`, `\'`, `a\'b`, `"`, "\"'\"",
	"$HOME", "${HOME}", "$(id)", "`id`", "!!", "!-1", "a!b", "^x^y", "#comment", "a#b",
	"*", "?", "[a]", "{a,b}", "~", "~root", "-rf", "--", "a=b", "%1", ";rm -rf /", "a&&b", "a|b", ">x", "<x",
	"a\nb", "\n", "\r\n", "\t", "\x01", "\x1b[31mred.lock", "\x1b]0;pwned\x07", "\x7f", "a'\nb\\", "\x1bf", "\\x41",
	"\xff", "\xfe\xff", "\xc2", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf",
	"\u009b", "\u0085", "\u202e", "\u202egnp.lock", "\u2066", "\u2069", "\u2028", "\u2029", "\u200f", "\ufeff",
	"é", "日本語.lock", "\U0001f512.lock", "\ufffd", "$'\\x41'", "$'a'", "a\\\nb", "'$'\\n'",
	"/tmp/x.lock.dead.5.123", "/tmp/" + strings.Repeat("a", 300) + ".lock",
}

// corpus adds inputs that fuzzing found and saved, if any.
func corpus(t *testing.T) []string {
	t.Helper()
	out := append([]string(nil), quoteSeeds...)
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzShellQuote", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "string("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(v, ")"))
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				out = append(out, s)
			}
		}
	}
	return out
}

func requireBash(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	return p
}

// bashPrint runs `printf %s <quoted>` in bash and returns what it printed.
func bashPrint(t *testing.T, bash, locale, q string) []byte {
	t.Helper()
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", "printf %s "+q)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=" + locale, "HOME=/nonexistent"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("bash -c %q: %v: %s", "printf %s "+q, err, stderr.Bytes())
	}
	return out
}

// The round trip: what ShellQuote writes, bash reads back as the very
// bytes it was given, in the C locale and in a UTF-8 one.
func TestShellQuoteBashRoundTrip(t *testing.T) {
	bash := requireBash(t)
	for _, s := range corpus(t) {
		if strings.IndexByte(s, 0) >= 0 {
			continue // no path, and no argument, holds a NUL
		}
		q := report.ShellQuote(s)
		checkTerminalSafe(t, "ShellQuote", s, q)
		if got, err := unquote(q); err != nil || got != s {
			t.Errorf("model reads ShellQuote(%q) = %s as %q, %v", s, q, got, err)
		}
		for _, locale := range []string{"C", "C.UTF-8"} {
			if got := bashPrint(t, bash, locale, q); string(got) != s {
				t.Errorf("LC_ALL=%s bash reads ShellQuote(%q) = %s as %q", locale, s, q, got)
			}
		}
	}
}

// Pasted into an interactive bash, where history expansion is on, the
// quoted words still come back unchanged ("!!" inside them is not expanded).
func TestShellQuoteInteractiveBash(t *testing.T) {
	bash := requireBash(t)
	var script strings.Builder
	var want []string
	script.WriteString("true history primer\n")
	for _, s := range corpus(t) {
		if strings.IndexByte(s, 0) >= 0 {
			continue
		}
		// One command a line, so history expansion sees each as typed.
		fmt.Fprintf(&script, "printf '%%s\\0' %s\n", report.ShellQuote(s))
		want = append(want, s)
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-i")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C.UTF-8", "HOME=/nonexistent", "HISTFILE=/dev/null", "PS1=", "TERM=dumb"}
	cmd.Stdin = strings.NewReader(script.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("interactive bash: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(want) {
		t.Fatalf("interactive bash printed %d words, want %d: %q", len(got), len(want), out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("interactive bash reads ShellQuote(%q) = %s as %q", want[i], report.ShellQuote(want[i]), got[i])
		}
	}
}

// FuzzShellQuote checks, for any input, that ShellQuote's output is safe on
// a terminal and that the model of bash reads it back exactly; for the
// seeds, bash itself reads it back too. Clean's output is checked alike.
func FuzzShellQuote(f *testing.F) {
	seeds := map[string]bool{}
	for _, s := range quoteSeeds {
		f.Add(s)
		seeds[s] = true
	}
	bash, _ := exec.LookPath("bash")
	f.Fuzz(func(t *testing.T, s string) {
		q := report.ShellQuote(s)
		checkTerminalSafe(t, "ShellQuote", s, q)
		got, err := unquote(q)
		if err != nil || got != s {
			t.Fatalf("ShellQuote(%q) = %s reads back as %q, %v", s, q, got, err)
		}
		if s != "" && strings.IndexFunc(s, func(r rune) bool { return r >= utf8.RuneSelf || !isSafe(byte(r)) }) < 0 && q != s {
			t.Errorf("ShellQuote(%q) = %s, want it unquoted", s, q)
		}
		c := report.Clean(s)
		checkTerminalSafe(t, "Clean", s, c)
		if utf8.ValidString(s) && strings.IndexFunc(s, isDangerous) < 0 && c != s {
			t.Errorf("Clean(%q) = %q, want it unchanged", s, c)
		}
		if seeds[s] && bash != "" && strings.IndexByte(s, 0) < 0 {
			if out := bashPrint(t, bash, "C.UTF-8", q); string(out) != s {
				t.Errorf("bash reads ShellQuote(%q) = %s as %q", s, q, out)
			}
		}
	})
}

// A hostile path quoted among other words stays one word, expanding nothing.
func TestShellQuoteOneWord(t *testing.T) {
	bash := requireBash(t)
	p := "/tmp/\x1b[31m$(touch pwned) 'x'\n.lock"
	q := report.ShellQuote(p)
	out := bashPrint(t, bash, "C", "'[' "+q+" ']'")
	if string(out) != "["+p+"]" {
		t.Errorf("printf %%s [ %s ] = %q, want one word %q", q, out, "["+p+"]")
	}
}

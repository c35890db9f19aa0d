package report

import (
	"bytes"
	"testing"

	"github.com/lockctl/lockctl/verdict"
)

// TestRenderPlainIsLipgloss: on a writer that takes no styling, render's
// pass-through gives what lipgloss itself gives, for every style a report
// uses and texts of every shape it writes (wide runes, spaces at either
// end, escapes, nothing); a multi-line or tabbed text still goes through
// lipgloss.
func TestRenderPlainIsLipgloss(t *testing.T) {
	st := NewStyles(&bytes.Buffer{})
	if !st.plain {
		t.Fatal("a bytes.Buffer is no terminal, yet its styles are not plain")
	}
	texts := []string{"", "x", "GONE     ", "  lead", "trail  ", "/var/lock/日本語.lock", "'a b'\\''c'",
		`\x1b[31m`, "what   ", "e\u0301", "🔒 lock", string(make([]byte, 300))}
	for _, text := range texts {
		if got, want := st.render(st.path, text), st.path.Render(text); got != want {
			t.Errorf("render(path, %q) = %q, lipgloss gives %q", text, got, want)
		}
		if got, want := st.render(st.label, text), st.label.Render(text); got != want {
			t.Errorf("render(label, %q) = %q, lipgloss gives %q", text, got, want)
		}
		for v, s := range st.verdict {
			if got, want := st.render(s, text), s.Render(text); got != want {
				t.Errorf("render(%s, %q) = %q, lipgloss gives %q", v, text, got, want)
			}
		}
	}
	// Where lipgloss does change a plain text, render leaves it to it.
	for _, text := range []string{"a\tb", "two\nlines", "cr\r"} {
		if got, want := st.render(st.verdict[verdict.Gone], text), st.verdict[verdict.Gone].Render(text); got != want {
			t.Errorf("render(%q) = %q, lipgloss gives %q", text, got, want)
		}
	}
}

//go:build linux

package cli

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const manPath = "../../docs/lockctl.1"

var update = flag.Bool("u", false, "rewrite docs/lockctl.1 from what 'lockctl man' prints")

func runLockctl(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Run(append([]string{"lockctl"}, args...), &out, &errb); code != ExitOK {
		t.Fatalf("lockctl %s exited %d\nstderr:\n%s", strings.Join(args, " "), code, errb.String())
	}
	return out.String(), errb.String()
}

// TestManPage: docs/lockctl.1 is what 'lockctl man' prints now. Regenerate
// it with 'go test ./internal/cli -run TestManPage -u'.
func TestManPage(t *testing.T) {
	got, stderr := runLockctl(t, "man")
	if stderr != "" {
		t.Errorf("lockctl man wrote to stderr: %q", stderr)
	}
	if *update {
		if err := os.WriteFile(manPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(manPath)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s is stale: run 'go test ./internal/cli -run TestManPage -u' and commit the result", manPath)
	}
}

// TestManPageCommands: every visible command and option is in the page;
// the hidden __gate is not.
func TestManPageCommands(t *testing.T) {
	page, _ := runLockctl(t, "man")
	app := newApp(&bytes.Buffer{}, &bytes.Buffer{})
	for _, c := range app.Commands {
		entry := `.SS \fBlockctl ` + strings.ReplaceAll(c.Name, "-", `\-`) + `\fR`
		if c.Hidden {
			if strings.Contains(page, c.Name) {
				t.Errorf("the hidden command %s is in the page", c.Name)
			}
			continue
		}
		if !strings.Contains(page, entry) {
			t.Errorf("the page has no entry for %s (%q)", c.Name, entry)
		}
		for _, f := range c.Flags {
			name := `\fB\-\-` + strings.ReplaceAll(f.Names()[0], "-", `\-`) + `\fR`
			if !strings.Contains(page, name) {
				t.Errorf("the page does not document %s --%s", c.Name, f.Names()[0])
			}
		}
	}
}

// TestManPageRoff: groff reads the page without a warning, and what it
// renders has the commands and an option as typed.
func TestManPageRoff(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("groff is not installed")
	}
	page, _ := runLockctl(t, "man")
	cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-rLL=200n")
	cmd.Stdin = strings.NewReader(page)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("groff: %v\n%s", err, errb.String())
	}
	// Strip overstriking (bold and underline) the way col -b does.
	text := regexpOverstrike(out.String())
	for _, want := range []string{"lockctl doctor [options] [PATH...]", "--format FORMAT", "lockctl completion bash|zsh|fish", "LOCKCTL_PATH", "'lockctl release LOCK'"} {
		if !strings.Contains(text, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
}

// regexpOverstrike removes "x\bx" and "_\bx" overstrikes and SGR escapes.
func regexpOverstrike(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i := 0; i < len(r); i++ {
		switch {
		case i+1 < len(r) && r[i+1] == '\b':
			i++ // drop the overstruck character; the next one stays
		case r[i] == 0x1b:
			for i < len(r) && r[i] != 'm' {
				i++
			}
		default:
			b.WriteRune(r[i])
		}
	}
	return b.String()
}

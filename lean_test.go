//go:build linux

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// lockctl is started once per critical section (`lockctl run`), so what it
// links costs every caller. Package os/user and package net link cgo,
// which makes the binary load the dynamic linker and libc at every start:
// about a millisecond here (docs/performance.md). lipgloss 1.1 brings
// os/user in through colorprofile and xo/terminfo, which is why go.mod
// keeps lipgloss at 1.0. A plain `go build`, cgo on, must stay static.
func TestBinaryLinksNoCgo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		switch p {
		case "runtime/cgo", "os/user", "net":
			t.Errorf("lockctl links %s, which makes every start load libc; see docs/performance.md", p)
		}
	}
}

//go:build linux

package testutil

import (
	"os"
	"slices"
	"testing"
)

// WriteFile writes data to path (mode 0644), failing the test if it cannot.
func WriteFile(t T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatalf("%v", err)
	}
}

// Mkdir makes the directory path and its parents, failing the test if it
// cannot.
func Mkdir(t T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
}

// Names lists the entries of dir (not below it), sorted.
func Names(t T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

// WantNames fails the test unless dir holds exactly the entries want.
func WantNames(t testing.TB, dir string, want ...string) {
	t.Helper()
	got := Names(t, dir)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s holds %q, want %q", dir, got, want)
	}
}

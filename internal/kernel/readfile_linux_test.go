package kernel

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFileAsOsReadFile(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 100_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/proc/self/status", "/proc/self/mountinfo", "/proc/sys/kernel/pid_max", big} {
		got, err := readFile(p)
		want, err2 := os.ReadFile(p)
		if err != nil || err2 != nil {
			t.Fatalf("%s: readFile %v, os.ReadFile %v", p, err, err2)
		}
		// status changes between two reads (voluntary_ctxt_switches):
		// compare the first line and the length class.
		if p == "/proc/self/status" {
			got, want = got[:10], want[:10]
		}
		if string(got) != string(want) {
			t.Errorf("%s: readFile read %d bytes, os.ReadFile %d", p, len(got), len(want))
		}
	}
	_, err := readFile("/proc/self/no-such-file")
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != "/proc/self/no-such-file" {
		t.Errorf("missing file: %v, want a *fs.PathError that is fs.ErrNotExist", err)
	}
}

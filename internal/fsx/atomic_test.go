//go:build linux

package fsx_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockctl/lockctl/internal/fsx"
)

// dirEntries lists the names in dir, so a test can see that nothing but
// the target is left behind.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func readOrMissing(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWriteFileAtomic: while the new report is being written, and after
// writing fails at any point, a reader of the target sees the whole old
// file; after success, the whole new one; and no temporary file is left.
// A writer that writes in place (truncate, then write) fails this.
func TestWriteFileAtomic(t *testing.T) {
	const old = "old report\n"
	newBody := strings.Repeat("new report line\n", 20000) // past any buffer
	fail := errors.New("render failed")

	tests := []struct {
		name    string
		exists  bool
		failAt  int // fail after writing this many bytes; -1: never
		wantErr bool
	}{
		{"replaces an existing file", true, -1, false},
		{"creates a new file", false, -1, false},
		{"render fails at once", true, 0, true},
		{"render fails half way", true, len(newBody) / 2, true},
		{"render fails half way, no file before", false, len(newBody) / 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "lockctl.prom")
			want := "<missing>"
			if tt.exists {
				if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
					t.Fatal(err)
				}
				want = old
			}
			err := fsx.WriteFileAtomic(path, func(w io.Writer) error {
				n := len(newBody)
				if tt.failAt >= 0 {
					n = tt.failAt
				}
				half := n / 2
				if _, err := io.WriteString(w, newBody[:half]); err != nil {
					return err
				}
				// A reader in the middle of the write.
				if got := readOrMissing(t, path); got != want {
					t.Errorf("during the write, the target holds %d bytes %.20q..., want the old file", len(got), got)
				}
				if _, err := io.WriteString(w, newBody[half:n]); err != nil {
					return err
				}
				if tt.failAt >= 0 {
					return fail
				}
				return nil
			})
			if tt.wantErr {
				if !errors.Is(err, fail) {
					t.Fatalf("WriteFileAtomic = %v, want the render error", err)
				}
			} else {
				if err != nil {
					t.Fatalf("WriteFileAtomic = %v", err)
				}
				want = newBody
			}
			if got := readOrMissing(t, path); got != want {
				t.Errorf("afterwards the target holds %d bytes %.20q..., want %d bytes %.20q...", len(got), got, len(want), want)
			}
			wantNames := "lockctl.prom"
			if want == "<missing>" {
				wantNames = ""
			}
			if got := strings.Join(dirEntries(t, dir), " "); got != wantNames {
				t.Errorf("the directory holds %q, want %q (no temporary file left)", got, wantNames)
			}
		})
	}
}

// TestWriteFileAtomicNoDirectory: a missing directory is an error that
// names it, and nothing is created.
func TestWriteFileAtomicNoDirectory(t *testing.T) {
	dir := t.TempDir()
	err := fsx.WriteFileAtomic(filepath.Join(dir, "none", "out.prom"), func(w io.Writer) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "cannot create a temporary file in "+filepath.Join(dir, "none")+": no such file or directory") {
		t.Fatalf("WriteFileAtomic into a missing directory = %v", err)
	}
	if got := dirEntries(t, dir); len(got) != 0 {
		t.Errorf("the directory holds %q, want nothing", got)
	}
}

// TestWriteFileAtomicMode: the file is readable as a shell redirection
// would make it (0666 less the umask), not 0600 like os.CreateTemp: the
// textfile collector runs as another user.
func TestWriteFileAtomicMode(t *testing.T) {
	mask := syscall.Umask(0o022)
	defer syscall.Umask(mask)
	path := filepath.Join(t.TempDir(), "out.prom")
	if err := fsx.WriteFileAtomic(path, func(w io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want -rw-r--r-- (0666 less umask 022)", st.Mode().Perm())
	}
}

// TestWriteFileAtomicRefusesNonRegular: a device, FIFO, directory or
// symbolic link at the path is refused and left as it was; renaming over
// it would replace /dev/null or /dev/stdout for everyone.
func TestWriteFileAtomicRefusesNonRegular(t *testing.T) {
	d := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(d, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	names := []string{"fifo", "dir", "link"}
	if os.Geteuid() == 0 {
		if err := syscall.Mknod(filepath.Join(d, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatal(err)
		}
		names = append(names, "null")
	}
	for _, name := range names {
		p := filepath.Join(d, name)
		before, _ := os.Lstat(p)
		err := fsx.WriteFileAtomic(p, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
		if !errors.Is(err, fsx.ErrNotRegular) {
			t.Errorf("WriteFileAtomic(%s) = %v, want ErrNotRegular", name, err)
		}
		if after, err := os.Lstat(p); err != nil || after.Mode() != before.Mode() {
			t.Errorf("%s is now %v (%v), was %v", name, after.Mode(), err, before.Mode())
		}
	}
	ents, _ := os.ReadDir(d)
	if len(ents) != len(names) {
		t.Errorf("%d entries left, want %d (no temporary file)", len(ents), len(names))
	}
}

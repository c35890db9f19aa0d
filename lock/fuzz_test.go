package lock

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSplit: whatever path the command line gives, split never panics,
// and what it accepts names one lock: a name that is a single component,
// neither . nor .., in an absolute directory, the two joining to the
// lock's path. What it refuses is *BadPathError (naming the path) or an
// error about the directory, never anything created.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"", ".", "..", "/", "x.lock", "a/b/x.lock", "dir/", "dir/..", "/tmp/../x.lock", "./x.lock", "x\x00y", "\xff.lock", "/nonexistent/x.lock", strings.Repeat("a/", 40) + "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		abs, dir, name, err := split(path)
		if err != nil {
			var bad *BadPathError
			if errors.As(err, &bad) && bad.Path != path {
				t.Fatalf("split(%q) refused %q", path, bad.Path)
			}
			return
		}
		switch {
		case path == "" || strings.HasSuffix(path, "/"):
			t.Fatalf("split(%q) accepted a path that names a directory", path)
		case name == "" || name == "." || name == ".." || strings.ContainsRune(name, filepath.Separator):
			t.Fatalf("split(%q) = name %q, want one component", path, name)
		case name != filepath.Base(path):
			t.Fatalf("split(%q) = name %q, want the path's own last component", path, name)
		case !filepath.IsAbs(dir) || filepath.Dir(abs) != dir || filepath.Base(abs) != name:
			t.Fatalf("split(%q) = %q in %q as %q", path, name, dir, abs)
		}
	})
}

//go:build linux

package testutil

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"
)

// Entry is what a snapshot keeps of one directory entry.
type Entry struct {
	Ino   uint64
	Mode  fs.FileMode
	Mtime time.Time // compared by Untouched only
	Data  string    // a regular file's bytes, a symbolic link's target
}

// Snapshot records every entry under root, root itself included as ".",
// without following symbolic links: path relative to root → inode, mode,
// modification time and content. It fails the test if root cannot be
// walked, or an entry read, while it looks; an entry that something else
// removes meanwhile is such a failure too.
func Snapshot(t T, root string) map[string]Entry {
	t.Helper()
	out := map[string]Entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := Entry{Ino: fi.Sys().(*syscall.Stat_t).Ino, Mode: fi.Mode(), Mtime: fi.ModTime()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Data = string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.Data, err = os.Readlink(p); err != nil {
				return err
			}
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", root, err)
	}
	return out
}

// Diff lists, sorted, how the snapshot got differs from want: entries
// removed, appeared, replaced (another inode), or with another mode or
// content. It does not compare modification times: a sweep that claims a
// record and puts it back leaves the tree as it was, with newer times on
// the directories it passed through. Tests that may not even do that use
// Untouched.
func Diff(want, got map[string]Entry) []string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s was removed", p))
		case g.Ino != w.Ino:
			out = append(out, fmt.Sprintf("%s is inode %d, was %d", p, g.Ino, w.Ino))
		case g.Mode != w.Mode:
			out = append(out, fmt.Sprintf("%s has mode %v, was %v", p, g.Mode, w.Mode))
		case g.Data != w.Data:
			out = append(out, fmt.Sprintf("%s holds %q, was %q", p, g.Data, w.Data))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, fmt.Sprintf("%s appeared", p))
		}
	}
	sort.Strings(out)
	return out
}

// SameTree fails the test, once for each difference Diff finds, unless
// root now holds what it held when before was taken.
func SameTree(t testing.TB, root string, before map[string]Entry) {
	t.Helper()
	for _, d := range Diff(before, Snapshot(t, root)) {
		t.Errorf("%s: %s", root, d)
	}
}

// Untouched is SameTree that also fails if an entry below root has another
// modification time: a file rewritten with the same bytes, or a directory
// in which an entry was made and removed again. The modification time of
// root itself is not compared: root is the registry, where the test's own
// lockers make and remove their entries.
func Untouched(t testing.TB, root string, before map[string]Entry) {
	t.Helper()
	after := Snapshot(t, root)
	diffs := Diff(before, after)
	for p, b := range before {
		a, ok := after[p]
		same := ok && a.Ino == b.Ino && a.Mode == b.Mode && a.Data == b.Data // else Diff said how
		if same && p != "." && !a.Mtime.Equal(b.Mtime) {
			diffs = append(diffs, fmt.Sprintf("%s was modified at %s, was %s", p, a.Mtime.Format(time.RFC3339Nano), b.Mtime.Format(time.RFC3339Nano)))
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Errorf("%s: %s", root, d)
	}
}

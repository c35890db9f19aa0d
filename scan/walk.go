// The walk: the roots an operator names (Root, ResolveRoot) and the
// Walker, which descends them relative to directory descriptors, never
// following a link, and hands each lock it finds to be read (read.go).

package scan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lockctl/lockctl/internal/fsx"
)

// Limits that keep a hostile registry from costing more than a bounded
// amount of time and memory per lock.
const (
	// MaxDepth is how deep the walk descends below a root.
	MaxDepth = 1024
	// maxSideFiles is how many side files, and how many holder records inside
	// one directory, are read for one lock; the rest are listed, not read.
	maxSideFiles = 64
	// maxOthers is how many unexpected names inside a lock directory are kept.
	maxOthers = 32
)

// Root is a place to look, as the operator named it.
type Root struct {
	// Given is the path as named; Path is its absolute form with symbolic
	// links in its parent directories resolved.
	Given string
	Path  string
	// Lock is true when the path is a lock itself rather than a registry to
	// walk: a file, a symbolic link, or a directory whose name is a lock name.
	Lock bool
	dev  uint64
	ino  uint64
}

// ResolveRoot finds what p names. Symbolic links in p's parent directories
// are resolved, and so is p itself when it is a symbolic link to a directory
// (the operator chose to name it); a symbolic link to anything else is a lock
// of its own and is not followed. The error, for a path that does not exist
// or cannot be examined, is an *fs.PathError.
func ResolveRoot(p string, m Matcher) (Root, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return Root{}, &fs.PathError{Op: "resolve", Path: p, Err: err}
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return Root{}, err
	}
	real := filepath.Join(parent, filepath.Base(abs))
	if abs == "/" {
		real = "/"
	}
	fi, err := os.Lstat(real)
	if errors.Is(err, fs.ErrNotExist) && m.IsLock(filepath.Base(real)) {
		// A lock that is gone but for its side files (an abandoned break
		// or release): named, it is read as the lock, which Walk reports
		// by its side files, or as not there when none is left.
		return Root{Given: p, Path: real, Lock: true}, nil
	}
	if err != nil {
		return Root{}, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := os.Stat(real); err == nil && t.IsDir() {
			if real, err = filepath.EvalSymlinks(real); err != nil {
				return Root{}, err
			}
			fi = t
		}
	}
	r := Root{Given: p, Path: real}
	// A directory by a producer's name only (/run/lock, .hg/store/lock is
	// never a directory) is a registry to walk, not a lock.
	base := filepath.Base(real)
	r.Lock = !fi.IsDir() || m.IsLock(base) && !m.OnlyIfKnown(base)
	if dev, ino, ok := fsx.DevIno(fi); ok {
		r.dev, r.ino = dev, ino
	}
	return r, nil
}

// Same reports whether r and s name the same directory entry, so that a
// registry named twice (/var/lock and /run/lock) is walked once.
func (r Root) Same(s Root) bool {
	return r.Lock == s.Lock && r.dev == s.dev && r.ino == s.ino && r.dev != 0
}

// Walker walks roots and hands each Lock it finds to Found, and each data
// file named like a lock to NotLock. Problems below a root that do not
// stop the walk (an unreadable subtree, a name that vanished) go to Warn.
// Found, NotLock and Warn are never called concurrently with themselves
// or each other; with Workers > 1 the order in which locks are found varies
// from run to run (the set does not).
type Walker struct {
	Match Matcher
	Found func(*Lock)
	// NotLock, if not nil, is handed each data file the walk passes by
	// (a file named like a lock whose bytes are a dependency manifest:
	// notlock.go). Such a file is never handed to Found.
	NotLock func(*NotLock)
	Warn    func(error)
	// Workers is how many directories may be walked at once; 0 or 1 walks
	// one at a time.
	Workers int
	// Judge, if not nil, is run on each lock before it is handed to Found,
	// by the goroutine that read it and concurrently with other locks'
	// (a pure judgement: it must be safe to run so); its answer is what
	// Found is given in place of the lock, through FoundJudged.
	Judge func(*Lock) any
	// FoundJudged receives each lock with Judge's answer for it, under the
	// same rule as Found (never concurrently); with Judge set, it is
	// called instead of Found.
	FoundJudged func(*Lock, any)
	// Entries counts the directory entries seen so far (for progress). It is
	// updated atomically and may be read while the walk runs.
	Entries atomic.Int64

	// beforeLockRead, for tests, runs after the directory holding a lock
	// was listed and before the lock itself is read.
	beforeLockRead func(name string)

	mu   sync.Mutex     // serialises Found and Warn
	wg   sync.WaitGroup // directories handed to other goroutines
	slot chan struct{}  // one token per extra goroutine allowed
}

func (w *Walker) found(l *Lock) {
	if w.Judge != nil {
		v := w.Judge(l) // outside the lock: judgements run side by side
		w.mu.Lock()
		defer w.mu.Unlock()
		w.FoundJudged(l, v)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.Found(l)
}

func (w *Walker) notLock(n *NotLock) {
	if w.NotLock != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.NotLock(n)
	}
}

// Walk walks one root. It returns an error only when the root itself cannot
// be opened; everything below it is reported through Warn and skipped.
func (w *Walker) Walk(r Root) error {
	if r.Lock {
		dir, name := filepath.Dir(r.Path), filepath.Base(r.Path)
		d, err := fsx.OpenRoot(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		l, nl, err := w.named(d, name)
		if err != nil {
			return err
		}
		if nl != nil {
			w.notLock(nl)
			return nil
		}
		if l == nil {
			return &fs.PathError{Op: "stat", Path: r.Path, Err: fs.ErrNotExist}
		}
		w.found(l)
		return nil
	}
	d, err := fsx.OpenRoot(r.Path)
	if err != nil {
		return err
	}
	st, err := d.Stat()
	if err != nil {
		d.Close()
		return err
	}
	if w.Workers > 1 && w.slot == nil {
		w.slot = make(chan struct{}, w.Workers-1)
	}
	w.dir(d, 0, []devIno{{st.Dev, st.Ino}})
	w.wg.Wait()
	return nil
}

// named reads the lock name in the directory d, whatever its name,
// with the side files that extend its name. It returns nil, nil if neither
// the lock nor any side file exists, and a NotLock for a data file.
func (w *Walker) named(d fsx.Dir, name string) (*Lock, *NotLock, error) {
	var cands tempCandidates
	sides, found, err := listSides(d, name, &cands)
	if err != nil {
		return nil, nil, err
	}
	dfs := &dirFS{dir: d}
	var temps []*tempFound
	if len(cands) > 0 {
		temps = readTemps(d, cands)
	}
	if isTemp(temps, name) {
		found = false // a producer's temporary, named: shown as such
	}
	switch {
	case found:
		l, nl := w.read(d, name, fs.ModeIrregular, sides, dfs, nil)
		attachTemps(l, temps)
		return l, nl, nil
	case len(sides) > 0:
		return w.orphan(d, name, sides, dfs), nil, nil
	}
	// Only its producer's temporaries remain (those that say they are
	// for this lock, or are named so themselves).
	for _, t := range temps {
		if t.t.Name == name {
			t.lock = name
		}
		t.used = t.lock != name
	}
	if ls := (&Walker{Match: exactMatcher(name)}).tempOrphans(d, temps, dfs); len(ls) == 1 {
		return ls[0], nil, nil
	}
	return nil, nil, nil
}

// listSides lists the directory d for the side files of the lock
// name (whatever its name), and says whether name itself is there.
func listSides(d fsx.Dir, name string, temps *tempCandidates) (sides []side, found bool, err error) {
	m := exactMatcher(name)
	err = d.Each(func(n string, typ fs.FileMode) {
		if temps != nil {
			temps.add(n, typ)
		}
		if n == name {
			found = true
		} else if s, ok := m.side(n); ok {
			s.name = strings.Clone(s.name)
			s.base = s.name[:len(s.base)]
			s.rest = s.name[len(s.name)-len(s.rest):]
			sides = append(sides, s)
		}
	})
	return sides, found, err
}

// sidesIn lists d for the side files of every lock w matches, by lock.
func (w *Walker) sidesIn(d fsx.Dir) (map[string][]side, error) {
	sides := map[string][]side{}
	err := d.Each(func(n string, _ fs.FileMode) {
		if s, ok := w.Match.side(n); ok {
			s.name = strings.Clone(s.name)
			s.base = s.name[:len(s.base)]
			s.rest = s.name[len(s.name)-len(s.rest):]
			sides[s.base] = append(sides[s.base], s)
		}
	})
	return sides, err
}

func sidesOf(d fsx.Dir, name string) ([]side, error) {
	sides, _, err := listSides(d, name, nil)
	return sides, err
}

// ReadOne reads the lock name in the directory dir, opened without
// following a symbolic link anywhere in its path, with its side files. It
// returns nil, nil when nothing by that name (or extending it) exists, and
// a *NotLockError when it is a data file (a dependency manifest), which no
// caller may wait on, take or remove.
func ReadOne(dir, name string) (*Lock, error) {
	d, err := fsx.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	l, nl, err := (&Walker{}).named(d, name)
	if nl != nil {
		return nil, &NotLockError{NotLock: nl}
	}
	return l, err
}

// devIno is a directory's identity, for the walk's loop check.
type devIno struct{ dev, ino uint64 }

// UnreadError is a part of a tree that the walk could not read, or did not
// (deeper than MaxDepth): a lock there was not seen, so a report that
// found none over it has not looked everywhere.
type UnreadError struct {
	// Path is the directory not read, or not read in full.
	Path string
	Err  error
}

func (e *UnreadError) Error() string { return e.Err.Error() }
func (e *UnreadError) Unwrap() error { return e.Err }

func unread(path string, err error) error { return &UnreadError{Path: path, Err: err} }

func (w *Walker) warn(err error) {
	if w.Warn != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.Warn(err)
	}
}

// listed is a lock's name as the listing of its directory gave it, with
// the type the file system reported (fs.ModeIrregular: it did not say).
type listed struct {
	name string
	typ  fs.FileMode
}

// dir handles the open directory d, and closes it. ancestors are the
// directories on the path from the root, so a bind-mount loop is noticed
// rather than walked forever (symbolic links are never followed, so they
// cannot loop).
func (w *Walker) dir(d fsx.Dir, depth int, ancestors []devIno) {
	defer d.Close()
	ls := w.list(d)
	dfs := &dirFS{dir: d}
	sides := ls.sides
	var temps []*tempFound // a producer's temporaries (temps.go), rarely any
	if len(ls.temps) > 0 {
		temps = readTemps(d, ls.temps)
	}
	var batch []*Lock // lock directories with nothing inside
	for _, e := range ls.locks {
		name := e.name
		if isTemp(temps, name) {
			continue // a producer's temporary, named like a lock
		}
		l, nl := w.read(d, name, e.typ, sides[name], dfs, &batch)
		switch {
		case nl != nil:
			dropTemps(temps, name)
			w.notLock(nl)
		case l != nil:
			attachTemps(l, temps)
			w.found(l)
		}
		if len(batch) == 0 || batch[len(batch)-1].Name != name {
			delete(sides, name)
		}
	}
	if len(batch) > 0 {
		// One more listing of d, after every one of them was read, serves
		// them all (readDirBeside): not one listing per lock.
		fresh, err := w.sidesIn(d)
		for _, l := range batch {
			s := sides[l.Name]
			if err == nil {
				s = fresh[l.Name]
			}
			delete(sides, l.Name)
			if l := w.finish(d, l, w.readDirBeside(d, l, s), dfs); l != nil {
				attachTemps(l, temps)
				w.found(l)
			}
		}
	}
	if len(sides) > 0 {
		bases := make([]string, 0, len(sides))
		for b := range sides {
			bases = append(bases, b)
		}
		sort.Strings(bases)
		for _, b := range bases {
			// The temporaries of its lock go with it, or tempOrphans
			// would make a second lock of the same path for them.
			l := w.orphan(d, b, sides[b], dfs)
			attachTemps(l, temps)
			w.found(l)
		}
	}
	for _, l := range w.tempOrphans(d, temps, dfs) {
		w.found(l)
	}
	for _, name := range ls.subdirs {
		w.descend(d, name, depth, ancestors)
	}
}

// listing is what one listing of a directory gave the walk: side files
// by lock, locks, subdirectories and names that may be temporaries.
type listing struct {
	sides   map[string][]side // most directories have none
	locks   []listed
	subdirs []string
	temps   tempCandidates
}

// list lists d once for the walk.
func (w *Walker) list(d fsx.Dir) listing {
	var ls listing
	// Names are lent by Each: clone only the ones kept.
	n := int64(0)
	err := d.Each(func(name string, typ fs.FileMode) {
		n++
		ls.temps.add(name, typ)
		if s, ok := w.Match.side(name); ok {
			if ls.sides == nil {
				ls.sides = map[string][]side{}
			}
			s.name = strings.Clone(s.name)
			s.base = s.name[:len(s.base)]
			s.rest = s.name[len(s.name)-len(s.rest):]
			ls.sides[s.base] = append(ls.sides[s.base], s)
			return
		}
		if w.Match.IsLock(name) {
			ls.locks = append(ls.locks, listed{strings.Clone(name), typ})
			return
		}
		// ModeIrregular: the file system did not say; OpenDir decides.
		if typ == fs.ModeDir || typ == fs.ModeIrregular {
			ls.subdirs = append(ls.subdirs, strings.Clone(name))
		}
	})
	w.Entries.Add(n)
	if err != nil {
		w.warn(unread(d.Path(), err)) // keep what was listed before the error
	}
	return ls
}

// descend walks the subdirectory name of d, on
// another goroutine when a worker is free: never through a symbolic link,
// never deeper than MaxDepth, never into one of its own ancestors (a
// bind-mount loop).
func (w *Walker) descend(d fsx.Dir, name string, depth int, ancestors []devIno) {
	sub := d.Join(name)
	if depth+1 > MaxDepth {
		w.warn(unread(sub, fmt.Errorf("not walking %q: deeper than %d levels", sub, MaxDepth)))
		return
	}
	c, err := d.OpenDir(name)
	if err != nil {
		// ENOTDIR: not a directory after all. ELOOP: a symbolic link,
		// never followed. ENOENT: removed since it was listed.
		if !fsx.IsNotDirOrLink(err) && !errors.Is(err, fs.ErrNotExist) {
			w.warn(unread(sub, err))
		}
		return
	}
	st, err := c.Stat()
	if err != nil {
		w.warn(unread(sub, err))
		c.Close()
		return
	}
	key := devIno{st.Dev, st.Ino}
	loop := false
	for _, a := range ancestors {
		if a == key {
			loop = true
		}
	}
	if loop {
		w.warn(fmt.Errorf("not walking %q: it is the same directory as one of its parents (a bind-mount loop)", sub))
		c.Close()
		return
	}
	// A fresh slice: goroutines must not share the backing array.
	anc := append(append(make([]devIno, 0, len(ancestors)+1), ancestors...), key)
	select {
	case w.slot <- struct{}{}:
		w.wg.Add(1)
		go func() {
			defer func() { <-w.slot; w.wg.Done() }()
			w.dir(c, depth+1, anc)
		}()
	default: // no free worker (or none configured): walk it here
		w.dir(c, depth+1, anc)
	}
}

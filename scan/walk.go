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

// Walker walks roots and hands each Lock it finds to Found. Problems below a
// root that do not stop the walk (an unreadable subtree, a name that vanished)
// go to Warn. Found and Warn are never called concurrently with themselves
// or each other; with Workers > 1 the order in which locks are found varies
// from run to run (the set does not).
type Walker struct {
	Match Matcher
	Found func(*Lock)
	Warn  func(error)
	// Workers is how many directories may be walked at once; 0 or 1 walks
	// one at a time.
	Workers int
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
	w.mu.Lock()
	defer w.mu.Unlock()
	w.Found(l)
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
		l, err := w.named(d, name)
		if err != nil {
			return err
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
// with the side files that extend its name. It returns nil if neither the
// lock nor any side file exists.
func (w *Walker) named(d fsx.Dir, name string) (*Lock, error) {
	sides, found, err := listSides(d, name)
	if err != nil {
		return nil, err
	}
	dfs := &dirFS{dir: d}
	switch {
	case found:
		return w.read(d, name, sides, dfs, nil), nil
	case len(sides) > 0:
		return w.orphan(d, name, sides, dfs), nil
	}
	return nil, nil
}

// listSides lists the directory d for the side files of the lock
// name (whatever its name), and says whether name itself is there.
func listSides(d fsx.Dir, name string) (sides []side, found bool, err error) {
	m := exactMatcher(name)
	err = d.Each(func(n string, _ fs.FileMode) {
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
	sides, _, err := listSides(d, name)
	return sides, err
}

// ReadOne reads the lock name in the directory dir, opened without
// following a symbolic link anywhere in its path, with its side files. It
// returns nil, nil when nothing by that name (or extending it) exists.
func ReadOne(dir, name string) (*Lock, error) {
	d, err := fsx.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return (&Walker{}).named(d, name)
}

type devIno struct{ dev, ino uint64 }

// dirFS finds the file system of a directory once, and only if a lock in
// it needs to know; and, for an entry on a mount of its own, that entry's.
type dirFS struct {
	dir  fsx.Dir
	done bool
	fs   fsx.FS
	// st is the directory's own Stat, for its mount id (statted once).
	statted bool
	st      fsx.Stat
}

// unknownFS is a file system that could not be told: treated like a
// network file system, the cautious side.
var unknownFS = fsx.FS{Name: "unknown", Remote: true}

// entry is f, the file system a lock in the directory is judged by, for
// its entry name (Stat st) as well: where that entry is on another mount
// than the directory (a file or directory bound or mounted over the name:
// a single-file volume of a container, a FUSE file), its own file system
// is, unless the directory's is remote. A directory on ext4 says nothing
// of a FUSE file bound into it. An entry on the directory's mount (the
// mount ids agree, which statx gives with the Stat already taken) costs
// nothing more.
func (d *dirFS) entry(f fsx.FS, name string, st fsx.Stat) fsx.FS {
	if !d.statted {
		d.statted = true
		d.st, _ = d.dir.Stat() // a zero Stat matches no mount: the entry is looked at
	}
	return ownFS(f, d.dir, d.st, name, st)
}

// ownFS is the file system a lock judged by f so far is judged by, given
// its entry name in dir, whose Stat is st: f while the entry is on on's
// mount (on is the Stat of what holds it) or f is remote already;
// otherwise the entry's own file system, which is remote if it cannot be
// told. It keeps f's NameMax: side files are made beside the lock, on the
// directory's file system.
func ownFS(f fsx.FS, dir fsx.Dir, on fsx.Stat, name string, st fsx.Stat) fsx.FS {
	if f.Remote || st.OnMountOf(on) {
		return f
	}
	own, err := dir.FSAt(name)
	if err != nil {
		own = unknownFS
	}
	own.NameMax = f.NameMax
	return own
}

func (d *dirFS) get() fsx.FS {
	if !d.done {
		d.done = true
		if fs, err := d.dir.FS(); err == nil {
			d.fs = fs
		} else {
			// Unknown: treated like a network file system, the cautious side.
			d.fs = unknownFS
		}
	}
	return d.fs
}

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

// dir handles the open directory d, and closes it. ancestors are the
// directories on the path from the root, so a bind-mount loop is noticed
// rather than walked forever (symbolic links are never followed, so they
// cannot loop).
func (w *Walker) dir(d fsx.Dir, depth int, ancestors []devIno) {
	defer d.Close()
	var sides map[string][]side // most directories have none
	var locks []string
	var subdirs []string
	// Names are lent by Each: clone only the ones kept.
	n := int64(0)
	err := d.Each(func(name string, typ fs.FileMode) {
		n++
		if s, ok := w.Match.side(name); ok {
			if sides == nil {
				sides = map[string][]side{}
			}
			s.name = strings.Clone(s.name)
			s.base = s.name[:len(s.base)]
			s.rest = s.name[len(s.name)-len(s.rest):]
			sides[s.base] = append(sides[s.base], s)
			return
		}
		if w.Match.IsLock(name) {
			locks = append(locks, strings.Clone(name))
			return
		}
		// ModeIrregular: the file system did not say; OpenDir decides.
		if typ == fs.ModeDir || typ == fs.ModeIrregular {
			subdirs = append(subdirs, strings.Clone(name))
		}
	})
	w.Entries.Add(n)
	if err != nil {
		w.warn(unread(d.Path(), err)) // keep what was listed before the error
	}
	dfs := &dirFS{dir: d}
	var batch []*Lock // lock directories with nothing inside
	for _, name := range locks {
		if l := w.read(d, name, sides[name], dfs, &batch); l != nil {
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
			w.found(w.orphan(d, b, sides[b], dfs))
		}
	}
	for _, name := range subdirs {
		w.descend(d, name, depth, ancestors)
	}
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

// read reads the lock name in the directory d, with its side files.
// It returns nil if the lock vanished and left nothing behind.
//
// With batch not nil, a lock directory with no record inside is not
// finished but added to batch (readDir), and nil returned.
func (w *Walker) read(d fsx.Dir, name string, sides []side, dfs *dirFS, batch *[]*Lock) *Lock {
	l := &Lock{Path: d.Join(name), Dir: d.Path(), Name: name, Format: FormatUnrecognized, FS: dfs.get()}
	if w.beforeLockRead != nil {
		w.beforeLockRead(name)
	}
	st, err := d.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		if len(sides) == 0 {
			return nil
		}
		return w.orphan(d, name, sides, dfs)
	}
	if err != nil {
		l.Kind = KindOther
		l.Err = err
		return l
	}
	l.Info = st
	l.FS = dfs.entry(l.FS, name, st)
	switch {
	case st.Mode.IsDir():
		l.Kind = KindDir
		var relist bool
		if sides, relist = w.readDir(d, l, sides); relist {
			if batch != nil {
				// Finished by the caller, after one more listing of d
				// for all such locks in it.
				*batch = append(*batch, l)
				return nil
			}
			if fresh, err := sidesOf(d, l.Name); err == nil {
				sides = fresh
			}
			sides = w.readDirBeside(d, l, sides)
		}
	case st.Mode.IsRegular():
		l.Kind = KindFile
		w.readFile(d, l)
	case st.Mode&fs.ModeSymlink != 0:
		l.Kind = KindSymlink
		readLinkLock(d, l)
	default:
		l.Kind = KindOther
	}
	return w.finish(d, l, sides, dfs)
}

// finish reads the side files of the lock l, read from d, and returns it,
// or nil when it is not to be reported.
func (w *Walker) finish(d fsx.Dir, l *Lock, sides []side, dfs *dirFS) *Lock {
	if w.Match.OnlyIfKnown(l.Name) && l.Producer == "" && l.KernelLock == "" {
		return nil // by a producer's name, but not that producer's
	}
	w.readSides(d, l, sides)
	recordsFS(l, dfs)
	if l.Kind == KindDir && l.Format == FormatEmpty {
		// An empty lock directory whose record was claimed away: its
		// format is the claimed record's.
		for _, c := range l.Claims {
			if (c.Kind == ClaimBreak || c.Kind == ClaimRelease) && c.Record.Holder != nil {
				l.Format = c.Record.Format()
				break
			}
		}
	}
	return l
}

// readRecord reads the record file name inside d; file is how the Record
// names it.
func readRecord(d fsx.Dir, name, file string) Record {
	data, st, truncated, err := d.ReadFile(name, MaxRecord)
	r := Record{File: file, Info: st, Raw: data}
	switch {
	case err != nil:
		r.Err = err
	case truncated:
		r.Err = malformed(FormatUnrecognized, "the record is larger than %d bytes", MaxRecord)
	}
	return r
}

func (w *Walker) readFile(d fsx.Dir, l *Lock) {
	r := readRecord(d, l.Name, l.Name)
	if longRecordOK(l.Name, r.Raw) {
		r.Err = nil // a format whose first bytes name the holder (vim's)
	}
	if r.Err == nil && !r.Info.SameFile(l.Info) {
		r.Err = fmt.Errorf("%q was replaced while it was being read", l.Path)
	}
	if r.Err == nil {
		l.Format, r.Holder, r.Err = ParsePidFile(r.Raw)
		recognise(l, &r)
	}
	switch {
	case r.Err != nil:
	case l.Format == FormatKernel:
		l.KernelLock = "lockctl"
	case l.Format == FormatEmpty:
		// dpkg, apt, firefox. Not otherwise: an empty git lock file keeps
		// the producer recognise gave it.
		if k := KnownKernelLock(d, l.Path); k != "" {
			l.KernelLock, l.Producer = k, k
		}
	}
	l.Holders = []Record{r}
}

// readDir reads a directory lock: generation B records and evidence inside,
// or the generation A holder beside it. It returns the side files it did
// not consume.
//
// A directory with no record inside needs the parent listed again after
// it was read (relist): then it returns relist true, and the caller lists
// the parent once for all such locks of it and calls readDirBeside.
func (w *Walker) readDir(d fsx.Dir, l *Lock, sides []side) (rest []side, relist bool) {
	in, err := d.OpenDir(l.Name)
	if err != nil {
		l.Err = err
		return sides, false
	}
	defer in.Close()
	ents, err := in.List()
	if err != nil {
		l.Err = err
		return sides, false
	}
	lockctl := readInside(in, l, ents)
	// A record inside on a mount of its own (a file bound over holder) is
	// judged by its own file system too.
	for _, r := range l.Holders {
		if base, ok := strings.CutPrefix(r.File, l.Name+"/"); ok && r.Info.Ino != 0 {
			l.FS = ownFS(l.FS, in, l.Info, base, r.Info)
		}
	}
	switch {
	case lockctl && len(l.Holders) == 1 && len(l.Writers)+len(l.Pending) == 0:
		l.Format = FormatLockctl
		return sides, false
	case len(l.Holders) > 0:
		l.Format = FormatRegistryB
		return sides, false
	case len(l.Writers) > 0 || len(l.Pending) > 0:
		l.Format = FormatRegistryB
		return sides, false
	}
	l.empty = len(ents) == 0
	return sides, true
}

// readDirBeside finishes reading a lock directory with no record inside,
// from sides, the side files of a listing of its parent made after the
// directory itself was read. The parent was first listed before this
// directory was read, and a record claimed out of it in between (a release
// or break under way) is a side file that listing missed: read in this
// order, a record is always seen in one place or the other. It returns the
// side files it did not consume.
func (w *Walker) readDirBeside(d fsx.Dir, l *Lock, sides []side) []side {
	// Generation A: the holder record is the sibling <lock>.holder.
	for i, s := range sides {
		if s.kind == ClaimHolder {
			r := readRecord(d, s.name, s.name)
			if r.Err == nil {
				r.Holder, r.Err = ParseRegistryA(r.Raw)
			}
			l.Holders = []Record{r}
			l.Format = FormatRegistryA
			return append(sides[:i:i], sides[i+1:]...)
		}
	}
	if l.empty {
		l.Format = FormatEmpty
		if p := emptyDirProducer(d, l.Name); p != "" {
			l.Producer = p // npm's proper-lockfile
		}
	}
	return sides
}

// readInside reads what the lock directory in holds, whose entries
// are ents: lockctl's record, generation B records and writer evidence, and
// anything else, which is counted as other. It reports whether lockctl's own
// record is among them.
func readInside(in fsx.Dir, l *Lock, ents []fsx.Entry) (lockctl bool) {
	for _, e := range ents {
		switch {
		case e.Name == "holder":
			// lockctl's own record.
			r := readRecord(in, e.Name, l.Name+"/"+e.Name)
			if r.Err == nil {
				r.Holder, r.Err = ParseLockctl(r.Raw)
			}
			l.Holders = append(l.Holders, r)
			lockctl = true
		case strings.HasPrefix(e.Name, "holder."):
			tok := strings.TrimPrefix(e.Name, "holder.")
			r := Record{File: l.Name + "/" + e.Name}
			if len(l.Holders) < maxSideFiles {
				r = readRecord(in, e.Name, l.Name+"/"+e.Name)
			} else {
				r.Err = fmt.Errorf("not read: more than %d holder records", maxSideFiles)
			}
			switch {
			case r.Err == nil && tok == "":
				r.Err = malformed(FormatRegistryB, "the file name carries no token")
			case r.Err == nil:
				r.Holder, r.Err = ParseRegistryB(r.Raw, tok)
			}
			l.Holders = append(l.Holders, r)
		case strings.HasPrefix(e.Name, "writer."):
			wr := Writer{Name: e.Name}
			parts := strings.Split(strings.TrimPrefix(e.Name, "writer."), ".")
			if len(parts) == 4 {
				wr.Token = strings.Join(parts[:3], ".")
				if isDigits(parts[3]) {
					wr.Pid, _ = parsePid(parts[3])
				}
			}
			l.Writers = append(l.Writers, wr)
		case strings.HasPrefix(e.Name, "pending."):
			l.Pending = append(l.Pending, e.Name)
		default:
			if len(l.Others) < maxOthers {
				l.Others = append(l.Others, e.Name)
			}
		}
	}
	return lockctl
}

// readSides reads the claims, staging and unpublished records beside a lock.
// Breaks and releases are read before builds: the records of many waiting
// (or killed) acquirers must never crowd a claim out of the read limit.
func (w *Walker) readSides(d fsx.Dir, l *Lock, sides []side) {
	sort.SliceStable(sides, func(i, j int) bool { return sides[i].kind != ClaimBuild && sides[j].kind == ClaimBuild })
	for i, s := range sides {
		by, tok, maker := s.claimant()
		c := Claim{Kind: s.kind, By: by, Maker: maker, Token: tok, Record: Record{File: s.name}}
		if i < maxSideFiles {
			c.Record = readRecord(d, s.name, s.name)
			if errors.Is(c.Record.Err, fsx.ErrNotRegular) && c.Record.Info.Mode.IsDir() {
				// lockctl builds its record in a directory beside the lock
				// (<lock>.new.<token>/holder) before publishing it.
				c.Record, c.Others = ReadSideDir(d, s.name)
			}
		} else {
			c.Record.Err = fmt.Errorf("%w: more than %d side files", ErrNotRead, maxSideFiles)
		}
		if c.Record.Err == nil {
			c.Record.Holder, c.Record.Err = parseClaimed(c.Record.Raw, tok)
		}
		if c.Kind == ClaimBreak || c.Kind == ClaimBuild {
			_, c.NS = cutNS(s.rest)
		}
		if h := c.Record.Holder; c.Maker && h != nil && !h.Reserved && (c.Kind == ClaimBuild || c.Kind == ClaimRelease) && c.Record.Format() == FormatLockctl {
			// lockctl builds and releases only records of its own pid
			// namespace (a release of another's is refused), so the
			// record's namespace is its maker's. Not a reservation's: a
			// worker in a container adopts, and a dispatcher anywhere
			// releases, a reservation made elsewhere, so the claim's
			// maker may be of any namespace, and is judged as such.
			c.NS = h.PidNS
		}
		if c.Kind == ClaimHolder && c.By == 0 && c.Record.Holder != nil {
			// A holder file left without its lock: the process that should
			// have removed it is the holder itself.
			c.By = c.Record.Holder.Pid
		}
		l.Claims = append(l.Claims, c)
	}
}

// ErrNotRead is why a side file past the read limit has no record: it was
// not read at all, so nothing is known of what it holds.
var ErrNotRead = errors.New("not read")

// ReadSideDir reads the record inside the side directory name of d (a
// lockctl build, <lock>.new.<token>.<maker>/holder), without following a
// link, and names the other entries there (at most a few dozen). The
// record's File is name + "/holder"; Holder is left for the caller to parse.
func ReadSideDir(d fsx.Dir, name string) (Record, []string) {
	sd, err := d.OpenDir(name)
	if err != nil {
		return Record{File: name, Err: err}, nil
	}
	defer sd.Close()
	ents, err := sd.List()
	if err != nil {
		return Record{File: name, Err: err}, nil
	}
	var others []string
	for _, e := range ents {
		if e.Name != "holder" && len(others) < maxOthers {
			others = append(others, e.Name)
		}
	}
	return readRecord(sd, "holder", name+"/holder"), others
}

// orphan makes a Lock for side files whose lock no longer exists: an
// abandoned break, release or publish.
func (w *Walker) orphan(d fsx.Dir, base string, sides []side, dfs *dirFS) *Lock {
	l := &Lock{Path: d.Join(base), Dir: d.Path(), Name: base, Kind: KindMissing, Format: FormatUnrecognized, FS: dfs.get()}
	w.readSides(d, l, sides)
	recordsFS(l, dfs)
	for _, c := range l.Claims {
		if c.Record.Holder != nil {
			l.Format = c.Record.Format()
			break
		}
	}
	return l
}

// recordsFS judges l by the file system of each record read beside it (a
// generation A holder, a claimed record) in the directory dfs describes
// that is on a mount of its own (ownFS).
func recordsFS(l *Lock, dfs *dirFS) {
	beside := func(r Record) {
		if r.Info.Ino != 0 && r.File != l.Name && !strings.Contains(r.File, "/") {
			l.FS = dfs.entry(l.FS, r.File, r.Info)
		}
	}
	for _, r := range l.Holders {
		beside(r)
	}
	for _, c := range l.Claims {
		beside(c.Record)
	}
}

// Format guesses which layout a parsed side-file record came from.
func (r Record) Format() Format {
	switch {
	case r.Holder == nil:
		return FormatUnrecognized
	case strings.HasPrefix(string(r.Raw), LockctlMagic+"\n") || r.Holder.Reserved:
		return FormatLockctl
	case strings.HasPrefix(string(r.Raw), "token "):
		if _, ok := ParseBToken(r.Holder.Token); ok {
			return FormatRegistryB
		}
		return FormatRegistryA
	}
	f, _, _ := ParsePidFile(r.Raw)
	return f
}

// readLinkLock reads a symbolic link that may be a producer's lock
// (Mercurial, Emacs, Chromium, Firefox keep their record in the link's
// target): never following it, only reading what it says. A link that is
// no known producer's stays a bare symlink.
func readLinkLock(d fsx.Dir, l *Lock) {
	p := linkProducer(l.Dir, l.Name)
	if p == "" {
		return
	}
	target, err := d.Readlink(l.Name, MaxRecord)
	if err != nil {
		return
	}
	h, err := ParseLinkLock(p, target)
	if err != nil {
		return
	}
	l.Producer, l.Format = p, Format(p)
	l.Holders = []Record{{File: l.Name, Info: l.Info, Raw: []byte(target), Holder: h}}
}

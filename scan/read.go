// Reading one lock the walk found: its file, directory or link, the
// records inside or beside it and its side files (read, readFile,
// readDir, readInside, readSides), and a side directory with no lock
// (ReadSideDir, orphan).

package scan

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// read reads the lock name in the directory d, with its side files.
// It returns nil if the lock vanished and left nothing behind, and a
// NotLock instead of a Lock for a data file (readData).
//
// With batch not nil, a lock directory with no record inside is not
// finished but added to batch (readDir), and nil returned.
//
// typ is the type the listing of d gave name (fs.ModeIrregular where it
// did not say). A regular file, the usual lock, is read at once, and
// the Stat of the descriptor it was read through stands for the lstat
// otherwise taken first (it is the same check: both are taken before the
// bytes are read, and a file that is not regular any more when it is
// opened is never read). Should that read fail in any way, the lock is
// read as any other, from its lstat, and the failure is the one that
// path meets.
func (w *Walker) read(d fsx.Dir, name string, typ fs.FileMode, sides []side, dfs *dirFS, batch *[]*Lock) (*Lock, *NotLock) {
	l := &Lock{Path: d.Join(name), Dir: d.Path(), Name: name, Format: FormatUnrecognized, FS: dfs.get()}
	if w.beforeLockRead != nil {
		w.beforeLockRead(name)
	}
	var rec *Record // the file's bytes, read already
	var st Stat
	var err error
	if typ.IsRegular() && !isDataName(name) {
		// Read through (r.Err nil), or read to MaxRecord and found
		// larger (the bytes are kept, and the error is the record's).
		if r := readRecord(d, name, name); r.Err == nil || r.Raw != nil && r.Info.Mode.IsRegular() {
			rec, st = &r, r.Info
		}
	}
	if rec == nil {
		st, err = d.Lstat(name)
	}
	if errors.Is(err, fs.ErrNotExist) {
		if len(sides) == 0 {
			return nil, nil
		}
		return w.orphan(d, name, sides, dfs), nil
	}
	if err != nil {
		l.Kind = KindOther
		l.Err = err
		return l, nil
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
				return nil, nil
			}
			if fresh, err := sidesOf(d, l.Name); err == nil {
				sides = fresh
			}
			sides = w.readDirBeside(d, l, sides)
		}
	case st.Mode.IsRegular():
		if nl := readData(d, l, st, sides); nl != nil {
			return nil, nl
		}
		l.Kind = KindFile
		w.readFile(d, l, rec)
	case st.Mode&fs.ModeSymlink != 0:
		l.Kind = KindSymlink
		readLinkLock(d, l)
	default:
		l.Kind = KindOther
	}
	return w.finish(d, l, sides, dfs), nil
}

// finish reads the side files of the lock l, read from d, and returns it,
// or nil when it is not to be reported.
func (w *Walker) finish(d fsx.Dir, l *Lock, sides []side, dfs *dirFS) *Lock {
	if w.Match.OnlyIfKnown(l.Name) && l.Producer == "" && l.KernelLock == "" && !keptByBytes(l) {
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

// readFile reads the lock file l, or takes rec, its bytes read already
// through the descriptor l.Info was taken from.
func (w *Walker) readFile(d fsx.Dir, l *Lock, rec *Record) {
	// The record is made where it is kept: a local one escapes (recognise
	// hands it to each format's functions) and is copied into the slice
	// again, two allocations a lock file.
	hs := make([]Record, 1)
	r := &hs[0]
	if rec != nil {
		*r = *rec
	} else {
		*r = readRecord(d, l.Name, l.Name)
	}
	if longRecordOK(l.Name, r.Raw) {
		r.Err = nil // a format whose first bytes name the holder (vim's)
	}
	if r.Err == nil && !r.Info.SameFile(l.Info) {
		r.Err = fmt.Errorf("%q was replaced while it was being read", l.Path)
	}
	if r.Err == nil {
		l.Format, r.Holder, r.Err = ParsePidFile(r.Raw)
		recognise(l, r)
	}
	switch {
	case r.Err != nil:
	case isKernelFile(l):
		l.KernelLock = "lockctl"
	case l.Format == FormatEmpty:
		// dpkg, apt, firefox. Not otherwise: an empty git lock file keeps
		// the producer recognise gave it.
		if k := KnownKernelLock(d, l.Path); k != "" {
			l.KernelLock, l.Producer = k, k
		}
	}
	l.Holders = hs
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
	if dirLayout(l, lockctl) || readInDir(in, l, ents) {
		return sides, false // a layout of records inside; the shell's <lock>/pid
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
	if rest, ok := readHolderBeside(d, l, sides); ok {
		return rest
	}
	if l.empty {
		l.Format = FormatEmpty
		if p := emptyDirProducer(d, l.Name); p != "" {
			l.Producer = p // npm's proper-lockfile
		}
	}
	return sides
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
		if h := c.Record.Holder; c.Maker && h != nil && !h.Reserved && (c.Kind == ClaimBuild || c.Kind == ClaimRelease) && isLockctlRecord(c.Record) {
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
func ReadSideDir(d Dir, name string) (Record, []string) {
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

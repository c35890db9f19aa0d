package scan

import (
	"errors"
	"fmt"

	"github.com/lockctl/lockctl/internal/fsx"
)

// Data files are not locks. Many programs pin their dependencies in a file
// whose name ends in .lock (Cargo.lock, yarn.lock, Gemfile.lock, ...): it
// matches the default name patterns, but it is a project's data, and its
// holder is nobody. The walk recognises such a file by its exact base name
// and its bytes, parsed strictly as its producer writes it (each data
// format's room says how, citing the producer), and hands it to
// Walker.NotLock, never to Walker.Found: a NotLock is a type of its own,
// so package verdict cannot judge it and package fix cannot remove it.
// Bytes that do not parse as the producer's structure are read as a lock
// as before (a pid written into a file named Cargo.lock is a lock).

// NotLock is a file named like a lock whose bytes are another program's
// data (a dependency manifest): never judged, never removed, never
// acquired. It is a snapshot, like a Lock.
type NotLock struct {
	// Path is the file's absolute path; Dir and Name are its directory and
	// base name, so Path == Dir + "/" + Name.
	Path, Dir, Name string
	Info            Stat
	// Format is the data format's Name ("cargo-lockfile"), What what it is for a
	// person: "Cargo's dependency pins (Cargo.lock)".
	Format, What string
}

// NotLockError is ReadOne's error for a path that is a NotLock: a data
// file, which no lock command may wait on, take or remove.
type NotLockError struct{ NotLock *NotLock }

func (e *NotLockError) Error() string {
	return fmt.Sprintf("%s is %s, not a lock", e.NotLock.Path, e.NotLock.What)
}

// IsNotLock reports whether err is (or wraps) a NotLockError, and returns it.
func IsNotLock(err error) (*NotLock, bool) {
	var e *NotLockError
	if errors.As(err, &e) {
		return e.NotLock, true
	}
	return nil, false
}

// MaxData is the most bytes read of a file to tell that it is a data file:
// manifests run far past MaxRecord. A larger file is not looked at as
// data, and is read as a lock (a record larger than MaxRecord, malformed).
const MaxData = 4 << 20

// DataFormat is one registered data format: a file another program writes
// under a name that looks like a lock's. Its room (format_manifests.go)
// names the files it goes by, parses them strictly, and cites its
// producer's source.
type DataFormat struct {
	// Name is its name in docs/formats.md's table of data files and in
	// scan/testdata/manifests/<Name>/.
	Name string
	// Producer is the program that writes it, What what a file of it is
	// ("Cargo's dependency pins").
	Producer, What string
	// Room is the file of package scan that holds it.
	Room string
	// Names are the exact base names it goes by (never a pattern).
	Names []string
	// Parse says whether b is this format, as its producer writes it: nil,
	// or why not. It never panics, whatever b holds.
	Parse func(b []byte) error
	// Fuzz are its parser's fuzz targets, "pkg:FuzzName" as .ci/run lists
	// them.
	Fuzz []string
	// Source is where the producer's code or documentation says what it
	// writes.
	Source string
}

// DataFormats returns the registered data formats (a copy).
func DataFormats() []DataFormat {
	out := make([]DataFormat, len(dataFormats))
	for i, f := range dataFormats {
		out[i] = *f
	}
	return out
}

// DataFormatOf says which data format a file named name holding b is, or
// nil when none: the first registered format that goes by that exact name
// and whose parser accepts b.
func DataFormatOf(name string, b []byte) *DataFormat {
	for _, f := range dataFormats {
		for _, n := range f.Names {
			if n == name && f.Parse(b) == nil {
				return f
			}
		}
	}
	return nil
}

// isDataName says some data format goes by the base name name.
func isDataName(name string) bool {
	for _, f := range dataFormats {
		for _, n := range f.Names {
			if n == name {
				return true
			}
		}
	}
	return false
}

// readData reads the regular file l (whose lstat is st) in d as a data
// file, and returns it as a NotLock when its name and bytes are a data
// format's; nil otherwise, and then the caller reads it as a lock. Side
// files beside it (a break claim, a holder record) are lockctl's and make
// it a lock: they are never hidden. The read is ReadFile's: relative to d,
// never following a link, never blocking, bounded by MaxData; a file
// replaced while it was read is not data.
func readData(d fsx.Dir, l *Lock, st Stat, sides []side) *NotLock {
	if len(sides) > 0 || !isDataName(l.Name) || st.Size == 0 || st.Size > MaxData {
		return nil
	}
	b, rst, truncated, err := d.ReadFile(l.Name, MaxData)
	if err != nil || truncated || !rst.SameFile(st) {
		return nil
	}
	f := DataFormatOf(l.Name, b)
	if f == nil {
		return nil
	}
	return &NotLock{Path: l.Path, Dir: l.Dir, Name: l.Name, Info: rst, Format: f.Name, What: f.What + " (" + l.Name + ")"}
}

package scan

import (
	"path/filepath"

	"github.com/lockctl/lockctl/internal/fsx"
)

// A lock format is one room. Each has a file of its own, format_<name>.go,
// that declares the names its locks go by, parses its bytes, states its
// producer's rule and remedy with the producer's own source cited, and
// registers itself in formats below. Its fixtures are
// testdata/formats/<name>/*.txtar and its fuzz seeds testdata/fuzz/<target>/.
// verdict's TestEveryFormat fails for a registered format without a fuzz
// target for its parser, a fixture for each verdict it declares, or a row
// in docs/formats.md ("How to add a format" there says the steps).
//
// The walk itself (opening without following links, the size limit,
// directories and side files) belongs to walk.go, never to a format: a
// format is handed the place, the name and the bytes.

// FormatSpec is one registered lock format: what it is called, whose it
// is, the names it claims, its parser, and its producer's rule. The
// unexported hooks are how the walk asks it, each nil where the format has
// nothing to say; the walk asks the formats in registry order, and the
// first that claims a lock reads it.
type FormatSpec struct {
	// Name is the format's name in docs/formats.md's table of formats and
	// in testdata/formats/<Name>.
	Name string
	// Formats are the Formats a lock of it is read as; empty when it keeps
	// whatever its bytes read as (a git lock holds the new file).
	Formats []Format
	// Producer is the program whose lock it is, judged by that program's
	// own rule, or "" for a layout that many programs write.
	Producer string
	// Room is the file of package scan that holds it.
	Room string
	// Names are the name patterns its locks are found by, reported
	// whatever they hold: they make DefaultNames (a pattern another format
	// brought first is not repeated).
	Names []string
	// KnownNames are name patterns reported only when the lock's place and
	// bytes say it is this producer's: they make ProducerNames.
	KnownNames []string
	// Parse reads one record of the format from its bytes (a link's
	// target, for a link lock), as the walk does; nil for a format with no
	// record (git's lock holds the new file; proper-lockfile's is an empty
	// directory; dpkg's and apt's are empty files).
	Parse func(b []byte) (*Holder, error)
	// Fuzz are the fuzz targets of Parse, "pkg:FuzzName" as .ci/run lists
	// them; every format with a Parse has at least one.
	Fuzz []string
	// Rule is the producer's own rule for its lock, Remedy what lockctl
	// then does, and Source where the producer's code says so.
	Rule, Remedy, Source string
	// Verdicts are the verdicts its rule gives; each has a fixture.
	Verdicts []string
	// TempPrefixes are how the names of its producer's temporary files
	// begin (the file it writes its record into and links to the lock's
	// name): the cheap test a name in a lock's directory passes before
	// temp is asked about it. Empty for a format with none.
	TempPrefixes []string

	// claims says the file l just read (its record r) is this format's
	// to read, by its place, name and bytes; read then reads it
	// (recognise). A format that claims a lock and cannot parse it leaves
	// it as read so far: no later format is asked.
	claims func(l *Lock, r *Record) bool
	read   func(l *Lock, r *Record)
	// link says a symbolic link by this name in dir is this producer's
	// lock, its record in the target, which parseLink reads.
	link      func(dir, name string) bool
	parseLink func(target string) (*Holder, error)
	// kernelFile says the empty file path (in the open directory d) is
	// this producer's kernel-lock file, held only by an fcntl or flock
	// lock, never by its existence.
	kernelFile func(d fsx.Dir, path string) bool
	// kernelCall is how its producer locks that file: "flock" (flock(2))
	// or "fcntl" (a POSIX record lock), which on Linux do not exclude
	// each other.
	kernelCall string
	// inDir reads the lock directory l, open as in, whose entries are
	// ents, when it holds no record lockctl's own layouts read, and says
	// whether it was this format's.
	inDir func(in fsx.Dir, l *Lock, ents []fsx.Entry) bool
	// emptyDir says the empty lock directory name in d is this
	// producer's.
	emptyDir func(d fsx.Dir, name string) bool
	// keepKnown says a lock found by one of the format's KnownNames, which
	// no producer claimed, is still to be reported: its bytes are this
	// format's (a daemon's pid file).
	keepKnown func(l *Lock) bool
	// longRecord says a lock file read to MaxRecord bytes, named name,
	// is this format's, whose first bytes are what names its holder.
	longRecord func(name string, raw []byte) bool
	// temp says the regular file name (one of TempPrefixes), whose bytes
	// are raw, is its producer's temporary file, and for which lock: that
	// lock's name, "" where the name does not say (the walk then ties it
	// to the lock whose inode it is), and the pid and host its name and
	// bytes agree on (host "" where the producer records none). Any doubt
	// is false: the file is then whatever else it is.
	temp func(name string, raw []byte) (lock string, pid int64, host string, ok bool)

	// What the judgement and the sweep ask of the format (units.go), each
	// nil or zero where it has nothing to say.

	// DirRecord, for a lock-directory format, is where its holder record
	// sits: what doctor --fix claims, and where a claimed record goes back.
	DirRecord *DirRecord
	// StaleIfOlderThanDir says a record older than its lock directory was
	// left by an earlier lock at that path (one kept beside the directory
	// outlives it).
	StaleIfOlderThanDir bool
	// UnscopedMayBeElsewhere says a record that names no scope may have
	// been written in another pid namespace: its pid absent here is not a
	// gone holder.
	UnscopedMayBeElsewhere bool
	// EvidenceOnly is why a lock directory of the format that holds no
	// record, only evidence of holders (registry-b's writer files), is
	// owner-less.
	EvidenceOnly string
	// inPlace says why a lock of the format is never claimed, its producer
	// taking a stale one by writing it again in place; "" when it may be.
	inPlace func(l *Lock) string
	// keep says why a gone lock of the format is kept all the same (a vim
	// swap with unsaved changes), or "".
	keep func(l *Lock) string
}

// formats is the registry, in the order the walk asks the formats: the
// order is precedence. A vim swap file is asked before Emacs's regular
// file lock (".#x.swp" is both names), Python filelock's two lines before
// git's lock file, and Mercurial's names before Firefox's bare "lock".
// The layouts many programs write come first: their names are the
// defaults, in the order the help shows them.
var formats = []*FormatSpec{
	&formatPid,
	&formatLockctl,
	&formatKernel,
	&formatRegistryA,
	&formatRegistryB,
	&formatPidDir,
	&formatPidFile,
	&formatVim,
	&formatNano,
	&formatPostgres,
	&formatMercurial,
	&formatEmacs,
	&formatChromium,
	&formatFirefox,
	&formatCcache,
	&formatFilelock,
	&formatGnuPG,
	&formatShadow,
	&formatXorg,
	&formatLibreOffice,
	&formatTerraform,
	&formatGit,
	&formatProperLockfile,
	&formatDpkg,
	&formatApt,
	&formatGoMod,
	&formatCargo,
	&formatRustc,
	&formatJavaLogging,
	&formatExim,
}

// Formats returns the registered formats, in precedence order (a copy:
// changing it changes nothing in the walk).
func Formats() []FormatSpec {
	out := make([]FormatSpec, len(formats))
	for i, f := range formats {
		out[i] = *f
	}
	return out
}

// DefaultNames are the lock name patterns used when none are given: every
// registered format's Names, in registry order.
var DefaultNames = registeredNames(func(f *FormatSpec) []string { return f.Names })

// ProducerNames join DefaultNames, but a lock by one of these names is
// reported only when its place and bytes say which known producer's it is
// (each format's KnownNames): a file merely called lock is not Firefox's.
var ProducerNames = registeredNames(func(f *FormatSpec) []string { return f.KnownNames })

func registeredNames(of func(*FormatSpec) []string) []string {
	var names []string
	seen := map[string]bool{}
	for _, f := range formats {
		for _, n := range of(f) {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return names
}

// recognise names the producer of a lock file just read, from its place,
// name and bytes, and reads what that producer's rule needs: the first
// format in the registry that claims it reads it.
func recognise(l *Lock, r *Record) {
	for _, f := range formats {
		if f.claims != nil && f.claims(l, r) {
			f.read(l, r)
			return
		}
	}
}

// linkProducer says whose symbolic-link lock name in dir would be, by place
// and name alone; the target must then parse as that producer's.
func linkProducer(dir, name string) string {
	for _, f := range formats {
		if f.link != nil && f.link(dir, name) {
			return f.Producer
		}
	}
	return ""
}

// ParseLinkLock parses the target of a producer's symbolic-link lock
// (Mercurial, Emacs, Chromium, Firefox: each format's file says its
// layout and cites its source). An unknown producer is a FormatError.
func ParseLinkLock(producer, target string) (*Holder, error) {
	for _, f := range formats {
		if f.Producer == producer && f.parseLink != nil {
			return f.parseLink(target)
		}
	}
	return nil, malformed(Format(producer), "no such producer")
}

// KnownKernelLock says which program's kernel-lock file path is, by its
// place and name, or "" when it is none known; d is the directory it is
// in, open, where its neighbours are looked at (each format's kernelFile:
// dpkg's, apt's, Firefox's .parentlock).
func KnownKernelLock(d Dir, path string) string {
	path = filepath.Clean(path)
	for _, f := range formats {
		if f.kernelFile != nil && f.kernelFile(d, path) {
			return f.Producer
		}
	}
	return ""
}

// KernelCall says how producer locks its kernel-lock file: "flock" or
// "fcntl"; "" for a producer with none. lockctl's own is "flock".
func KernelCall(producer string) string {
	if producer == "lockctl" {
		return "flock"
	}
	for _, f := range formats {
		if f.Producer == producer && f.kernelFile != nil {
			return f.kernelCall
		}
	}
	return ""
}

// readInDir asks each format whose lock directory l (open as in, its
// entries ents) may be, when no layout of lockctl's own read it.
func readInDir(in fsx.Dir, l *Lock, ents []fsx.Entry) bool {
	for _, f := range formats {
		if f.inDir != nil && f.inDir(in, l, ents) {
			return true
		}
	}
	return false
}

// keptByBytes says a lock found by a producer's name that no producer
// claimed is reported all the same, its bytes being a format's that
// keeps such locks (keepKnown).
func keptByBytes(l *Lock) bool {
	for _, f := range formats {
		if f.keepKnown != nil && f.keepKnown(l) {
			return true
		}
	}
	return false
}

// emptyDirProducer says whose empty lock directory name in d is, or "".
func emptyDirProducer(d fsx.Dir, name string) string {
	for _, f := range formats {
		if f.emptyDir != nil && f.emptyDir(d, name) {
			return f.Producer
		}
	}
	return ""
}

// longRecordOK says a lock file named name whose first MaxRecord bytes
// are raw is read by them although it runs longer: a format whose first
// bytes are what names its holder (a vim swap's block 0).
func longRecordOK(name string, raw []byte) bool {
	for _, f := range formats {
		if f.longRecord != nil && f.longRecord(name, raw) {
			return true
		}
	}
	return false
}

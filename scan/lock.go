// Package scan finds locks and reads what they say about their holder.
//
// It walks registry directories relative to open directory descriptors,
// never follows a symbolic link, never reads anything but a regular file
// (a record is opened without blocking and refused unless the open file is
// regular; a lock that is itself a FIFO, socket or device is never opened),
// and reads at most MaxRecord bytes of any record. It judges nothing: a Lock is the raw material for package
// verdict. A file named like a lock whose bytes are a dependency manifest
// (Cargo.lock, yarn.lock, ...; read up to MaxData bytes to tell) is no
// Lock but a NotLock, which the walk hands only to Walker.NotLock
// (notlock.go). Every name it reports is the name as found on disk, byte for
// byte; rendering it safely is the caller's job.
package scan

import (
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
)

// The file-system types of scan's API, named here so that a program
// outside this module can use them (their package is internal).
type (
	// Dir is an open directory: every operation lockctl makes is
	// relative to its descriptor and never follows a link.
	Dir = fsx.Dir
	// Stat is what lstat says of a file: its kind, device, inode, size
	// and times.
	Stat = fsx.Stat
	// FS is the file system a lock lives on, as far as its verdict
	// needs: its type and whether it is shared between hosts.
	FS = fsx.FS
)

// Kind is what sort of file system entry a lock is.
type Kind string

// The kinds of lock entry.
const (
	KindDir     Kind = "dir"
	KindFile    Kind = "file"
	KindSymlink Kind = "symlink"
	KindOther   Kind = "other"   // FIFO, socket or device: never opened
	KindMissing Kind = "missing" // only side files remain
)

// Format is the on-disk layout a lock was read as.
type Format string

// The shapes any lock file's bytes can take whatever its format: empty,
// "0" (written without an owner) or bytes lockctl cannot read. Every
// other Format is its format's own, declared in its room,
// format_<name>.go; formats.go lists them all. See docs/formats.md.
const (
	FormatNoPid        Format = "no-pid"       // "0": written without an owner
	FormatEmpty        Format = "empty"        // empty file, or empty dir with no holder file
	FormatUnrecognized Format = "unrecognized" // content lockctl cannot read as a record
)

// Lock is one lock found on disk together with every side file that belongs
// to it. It is a snapshot: by the time it is judged the disk may have moved
// on, which is why package fix re-reads and compares Stat before acting.
type Lock struct {
	// Path is the absolute path of the lock. Dir is the directory holding it
	// and Name its base name, so Path == Dir + "/" + Name.
	Path string
	Dir  string
	Name string
	Kind Kind
	// Info describes the lock entry itself (zero when Kind is KindMissing).
	Info Stat
	// FS is the file system the lock is judged by: the directory's, and
	// where the lock itself or a record of it is on a mount of its own (a
	// bind mount over its name), that one's when it is remote or cannot
	// be told. Remote is then true when any of them is.
	FS     FS
	Format Format
	// Holders are the holder records: the sibling <lock>.holder of
	// generation A, every holder.<token> inside a generation B directory, or
	// the lock file itself for pid files.
	Holders []Record
	// Side files beside the lock: break claims, release staging and records
	// waiting to be published.
	Claims []Claim
	// Writers and Pending are generation B evidence files inside the lock
	// directory; Others are any further entries there.
	Writers []Writer
	Pending []string
	Others  []string
	// Temps are its producer's temporary files left beside it (or, for a
	// lock of KindMissing, all that remains of it): GnuPG's .#lk*, shadow's
	// <database>.<pid>, an X server's .tX<n>-lock (temps.go). They never
	// change its verdict.
	Temps []Temp
	// KernelLock names who makes this file a kernel lock, a lock held only
	// by an flock or fcntl lock on it and never by its existence: "lockctl"
	// for a file holding lockctl's KernelRecord, or the program whose known
	// lock file it is ("dpkg", "apt"; see KnownKernelLock). Empty for every
	// other lock, an empty file of unknown kind included.
	KernelLock string
	// Producer names the program whose lock this is, when its place, name
	// and bytes say so (its format's room, format_<producer>.go): "git", "postgresql". Its own rule
	// then judges it.
	Producer string
	// Repo is the repository a git lock belongs to: its common git
	// directory (Producer "git").
	Repo *Repo
	// Postgres is what a PostgreSQL lock file says beyond its pid.
	Postgres *Postgres
	// Vim is what a vim swap file says beyond its pid.
	Vim *Vim
	// LibreOffice is what a LibreOffice document lock says beyond its
	// user and host.
	LibreOffice *LibreOffice
	// Terraform is what a Terraform lock info file says, and the state
	// file whose kernel lock is the lock itself.
	Terraform *Terraform
	// Err is set when the lock could not be read at all.
	Err error
	// empty says a lock directory was empty when read (readDir).
	empty bool
}

// Record is one holder record as read from disk: where it is, the file it
// was read from, the bytes, and what they say. A record whose bytes could not
// be read or parsed has Holder == nil and Err saying why.
type Record struct {
	// File is the record's path relative to Lock.Dir, e.g. "x.lock.holder"
	// or "x.lock/holder.<token>".
	File   string
	Info   Stat
	Raw    []byte
	Holder *Holder
	Err    error
}

// Holder is what a record says about the process that holds the lock.
type Holder struct {
	// Pid is the process id as written. It may be out of range (zero,
	// negative, above pid_max, or clamped to MaxInt64 on overflow); PidText
	// is the digits exactly as written.
	Pid     int64
	PidText string
	Host    string
	Command string
	Token   string
	// Since is when the holder says it took the lock (the epoch in a
	// generation A token), or the zero time.
	Since time.Time
	// Scope is the generation B scope digest; "" means "could not tell".
	Scope string
	// Break is the generation B break policy: "", "no" or "writers".
	Break string
	// Start, when HasStart, is the holder's start time in clock ticks since
	// boot (field 22 of /proc/<pid>/stat), with BootID and PidNS naming the
	// boot and pid namespace it belongs to.
	Start    uint64
	HasStart bool
	// RawStart says Start is field 22 exactly as the writer read it, in
	// the clock of the writer's time namespace (the kernel adds the
	// reader's boottime offset to it), not counted from the real boot as
	// lockctl's own records are (ParseFilelock). Such a start time can be
	// compared only with field 22 as shown in that same time namespace.
	RawStart bool
	BootID   string
	PidNS    string
	// Also are further processes that hold the lock together with Pid
	// (lockctl run records itself and the command it runs), each fenced by
	// its own start time. The lock is held while any of them runs.
	Also []Identity
	// User is the user a producer's record names (Emacs).
	User string
	// Booted is when the holder's machine booted, by the record (Emacs
	// writes its own idea of it): evidence that a running pid is another
	// process, never that it is gone.
	Booted time.Time
	// HostAddr says Host is an IP address, not a host name (Firefox).
	HostAddr bool
	// Reserved says the record is a reservation (lockctl reserve): the
	// lock is held for a worker not started yet until Until, a time on
	// this boot's CLOCK_MONOTONIC as the host's time namespace counts it.
	// TimeNS is the monotonic offset of the writer's time namespace. Pid
	// is the reserver, whose exit frees nothing.
	Reserved bool
	Until    time.Duration
	TimeNS   time.Duration
	// Root is the repository root a keyed lock (--root) occupies, as its
	// holder resolved it: an absolute path, or "".
	Root string
	// Slots is how many slots the counting lock this is a slot of has
	// (--slots), or 0 for a plain lock.
	Slots int
}

// Identity is one process, named for the life of a boot: a pid and its
// start time in clock ticks.
type Identity struct {
	Pid   int64
	Start uint64
}

// ClaimKind says what a side file beside a lock is doing there.
type ClaimKind string

// The kinds of side file that make a lock "claimed".
const (
	ClaimBreak   ClaimKind = "break"   // <lock>.dead.*
	ClaimRelease ClaimKind = "release" // <lock>.holder.releasing.<pid>, <lock>.rel.<token>
	ClaimPublish ClaimKind = "publish" // <lock>.pub.<token>
	ClaimHolder  ClaimKind = "holder"  // <lock>.holder with no lock beside it
	// ClaimBuild is lockctl's lock being built beside its name
	// (<lock>.new.<token>/holder) by a process waiting to acquire it. Unlike
	// ClaimPublish it says nothing about who holds the lock that is there.
	ClaimBuild ClaimKind = "build"
)

// Claim is a side file: who made it (By, 0 when the name does not say) and
// the record it holds.
type Claim struct {
	Kind ClaimKind
	// By is the pid of the breaker, releaser or publisher named in the file
	// name, or 0 when the name carries none.
	By int64
	// Maker is true when By names the process that made the side file
	// (<lock>.dead.<pid>.*, <lock>.holder.releasing.<pid>,
	// <lock>.rel.<token>.<pid>, <lock>.new.<token>.<pid>), and false when it
	// is only the holder's pid taken from a token (<lock>.rel.<token>).
	Maker bool
	// NS is the pid namespace By is a pid of (a link such as
	// "pid:[4026531836]"), where the side file says: lockctl's break claims
	// carry it in their name (<lock>.dead.<...>.ns<inode>), and its builds
	// and releases in the record their maker wrote. "" means nothing says.
	NS string
	// Token is the token the side file's name carries, or "".
	Token  string
	Record Record
	// Others are the entries of a side directory (a build) other than its
	// record, at most a few dozen: a directory holding more than its
	// record is not lockctl's build, whatever its name says.
	Others []string
}

// Writer is a generation B writer.<token>.<pid> evidence file.
type Writer struct {
	Name  string
	Token string
	Pid   int64
}

// Package lock is a lock on a path that can never be left empty, is fenced
// by its holder's start time, and is broken automatically only when its
// holder is provably gone.
//
// The lock is a directory holding one record (docs/record-format.md) that names
// the holder: pid, start time, boot id, pid namespace and host. Acquire
// builds that directory complete beside the lock, fsyncs it, and puts it in
// place with renameat2(RENAME_NOREPLACE): the lock appears with its owner
// already inside, so no crash can leave an empty lock behind. A lock that is
// already there is judged exactly as `lockctl doctor` judges it, and broken
// with the same claim-first sweep as `lockctl doctor --fix`, only when its
// verdict is gone. Release removes only this holder's own record, checked by
// inode and bytes.
package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Point names a step of the protocols, for tests that stop or kill a
// process exactly there (Options.Hook).
type Point string

// The points at which Options.Hook is called.
const (
	Built          Point = "acquire-built"     // record built beside the lock, not yet published
	Published      Point = "acquire-published" // the lock is ours
	ReleaseClaimed Point = "release-claimed"   // our record claimed, not yet verified
	ReleaseRemoved Point = "release-removed"   // lock directory removed, claim not yet
	KernelOpened   Point = "kernel-opened"     // kernel-lock file open, not yet locked
	AdoptClaimed   Point = "adopt-claimed"     // the reservation claimed out of the lock, the worker's record not yet in
	AdoptMoved     Point = "adopt-moved"       // the worker's record in the lock, the reservation's claim not yet removed
)

// Options configure Acquire.
type Options struct {
	// Pid is the process that holds the lock; 0 means this process. It must
	// be running: its start time fences the record.
	Pid int
	// Also are further processes that hold the lock with Pid. The lock stays
	// held while any of them runs (lockctl run records itself and the
	// command it runs).
	Also []int
	// Command names the holder in the record; empty means this program.
	Command string
	// Hook, when set, is called at each Point. Tests only.
	Hook func(Point)
	// Waiting, when set, is told who holds the lock once a wait has lasted
	// a second, and again whenever that changes: "held by pid 812 (rsync)".
	Waiting func(who string)
	// Slots, when more than 1, makes the lock a counting lock of that many
	// slots (SlotPaths): Acquire takes whichever is free, and the Lock's
	// Path is that slot's. Every caller of one lock must give the same.
	Slots int
	// Root, when set, is the repository root a keyed lock occupies
	// (RootLock): the record names it, for doctor to show.
	Root string
	// Start, when set, starts the holding process once the lock is built
	// beside its name and this process's flock is on it, before its record
	// is written: it is handed that open directory (nil where there is no
	// flock) for the new process to inherit, and returns its pid, which the
	// record then names in place of Pid. The process must not do its work
	// before Acquire returns (lockctl run holds it at a gate until then);
	// if Acquire fails after Start, the caller ends it. This process holds
	// the flock too, so Also should name it.
	Start func(lockDir *os.File) (pid int, err error)
	// Kernel answers what the lock asks of the running kernel: this host,
	// start times, the judge of each try (judges.Kernel, handed in by
	// internal/cli). Nil fails closed: nothing can be acquired.
	Kernel Kernel
}

// Lock is a held lock. Release it exactly once.
type Lock struct {
	// Path is the lock's absolute path.
	Path string
	// Holder is the record this process wrote.
	Holder  scan.Holder
	dir     string
	name    string
	record  []byte
	recInfo fsx.Stat
	dirInfo fsx.Stat
	hook    func(Point)
	waiting func(string)
	// syncPublish says the publishing rename is fsynced (a remote file
	// system, or one of unknown kind).
	syncPublish bool
	// slots are the names of a counting lock's slots (Options.Slots), the
	// first of them the lock's own name; nil for a plain lock.
	slots []string
	// kernel is the lock directory, open, with this process's flock on it
	// (nil where the platform has no flock).
	kernel *os.File
	// kern is the wired kernel (Options.Kernel), host the machine it
	// reads.
	kern Kernel
	host verdict.Host
	// opens counts the opens of the lock directory since it was flocked
	// (openWatch), nil where it cannot; opensSeen is true once an open
	// that was not this process's own was seen, or could not be ruled out.
	opens     *openWatch
	opensSeen bool
}

// File is the lock directory, open, with this process's flock on it: pass
// it to a child (lockctl run passes it to CMD) and the child holds that
// kernel lock too, so that flock(1) on the path waits while either runs. It
// is nil where the platform has no flock. Release closes it.
func (l *Lock) File() *os.File { return l.kernel }

// selfPid is this process's pid, asked once: a Go process cannot fork
// without exec, so it cannot change, and an Acquire and Release asked for it
// six times.
var selfPid = os.Getpid()

var errNoFence = errors.New("cannot read this host's boot id, pid namespace or name, so the lock cannot be fenced")

// holder builds the record for opts, asking k for the fence.
func holder(k Kernel, opts Options) (scan.Holder, error) {
	h := k.Host()
	if h.BootID == "" || h.PidNS == "" || h.Name == "" {
		return scan.Holder{}, errNoFence
	}
	pid := opts.Pid
	if pid == 0 {
		pid = selfPid
	}
	start, err := k.Start(pid)
	if err != nil {
		return scan.Holder{}, err
	}
	rec := scan.Holder{
		Pid: int64(pid), PidText: strconv.Itoa(pid), Start: start, HasStart: true,
		BootID: h.BootID, PidNS: h.PidNS, Host: h.Name, Command: opts.Command,
		Token: newToken(pid), Since: time.Now(), Root: opts.Root,
	}
	if opts.Slots > 1 {
		rec.Slots = opts.Slots
	}
	if rec.Command == "" {
		rec.Command = filepath.Base(os.Args[0])
	}
	for _, a := range opts.Also {
		s, err := k.Start(a)
		if err != nil {
			return scan.Holder{}, err
		}
		rec.Also = append(rec.Also, scan.Identity{Pid: int64(a), Start: s})
	}
	return rec, nil
}

// Acquire takes the lock at path for opts.Pid, waiting until ctx is done.
//
// While the lock is held by someone else it is judged on every try. A lock
// whose holder is gone, or an abandoned break of one, is swept with the
// claim-first protocol of package fix and the lock is tried again at once.
// A lock that is live, recycled, owner-less, foreign or unknown is never
// broken: Acquire waits, and when ctx ends returns *HeldError,
// *OwnerlessError, *ForeignError or *UnknownError, saying which it was.
//
// If Acquire is killed, what it leaves is either nothing, the unpublished
// record directory <lock>.new.<token> (which doctor reports and --fix
// removes once this process is gone), or a complete lock naming this
// process, which reads as gone once it has died.
func Acquire(ctx context.Context, path string, opts Options) (*Lock, error) {
	return acquire(ctx, path, opts, 0)
}

// acquire is Acquire, or with grace > 0 Reserve: the record it publishes is
// then a reservation until grace from now, and no flock is taken, since
// the reserver need not live.
func acquire(ctx context.Context, path string, opts Options, grace time.Duration) (*Lock, error) {
	d, abs, name, err := openLockDir(path)
	if err != nil {
		var bad *BadPathError
		if errors.As(err, &bad) {
			return nil, err
		}
		return nil, fmt.Errorf("cannot acquire %s: %w", abs, err)
	}
	defer d.Close()
	k := kernelOr(opts.Kernel)
	host := k.Host()
	if host.BootID == "" || host.PidNS == "" || host.Name == "" {
		// Checked before Start makes a process that would have to be ended.
		return nil, fmt.Errorf("cannot acquire %s: %w", abs, errNoFence)
	}
	l := &Lock{Path: abs, dir: d.Path(), name: name, hook: opts.Hook, waiting: opts.Waiting, kern: k, host: host}
	if err := l.place(d, path, opts.Slots); err != nil {
		return nil, err
	}
	token, err := l.firstRecord(opts, grace)
	if err != nil {
		return nil, err
	}

	// Build the whole lock beside its final name (<lock>.new.<token>, a
	// name that claims nothing about the lock that may be there): a
	// directory holding the record, both fsynced. After a power loss the
	// record is either complete or the lock does not exist; a record that
	// survives carries the old boot id and reads as gone.
	tmp, err := l.makeBuild(d, token)
	if err != nil {
		return nil, err
	}
	published := false
	defer func() {
		if !published {
			removeBuilt(d, tmp)
			l.dropKernel()
		}
	}()
	if grace == 0 && (opts.Start != nil || opts.Pid == 0 || opts.Pid == selfPid || slices.Contains(opts.Also, selfPid)) {
		// This process is a recorded holder, alive to hold the kernel lock
		// too (and to hand it to the process Start makes); one that only
		// acquires for another process is not.
		if err := l.flockBuilt(d, tmp); err != nil {
			return nil, fmt.Errorf("cannot acquire %s: %w", abs, err)
		}
	}
	if opts.Start != nil {
		if opts.Pid, err = opts.Start(l.kernel); err != nil {
			return nil, err
		}
		if l.Holder, err = holder(k, opts); err != nil {
			return nil, fmt.Errorf("cannot acquire %s: %w", abs, err)
		}
	}
	l.record = encode(l.Holder)
	if err := l.build(d, tmp); err != nil {
		return nil, fmt.Errorf("cannot acquire %s: %w", abs, err)
	}
	l.at(Built)

	published, err = l.publish(ctx, d, tmp)
	if err != nil {
		l.dropKernel()
		return nil, err
	}
	return l, nil
}

// place learns where the lock goes: its slots' names (a counting lock of
// slots), whether the longest name leaves room for the side files that
// would break it, and whether publishing it must be made durable.
func (l *Lock) place(d fsx.Dir, path string, slots int) error {
	longest := l.name
	if slots > 1 {
		paths, err := SlotPaths(l.Path, slots)
		if err != nil {
			return err
		}
		for _, p := range paths {
			l.slots = append(l.slots, filepath.Base(p))
		}
		longest = l.slots[len(l.slots)-1]
	}
	fs, err := d.FS()
	if err == nil {
		if err := roomForSides(fs, path, longest); err != nil {
			return err
		}
	}
	// On a local file system the rename that publishes the lock needs no
	// fsync after it: lost in a crash, it leaves no lock, and a lock that
	// survives one carries the old boot id, so reads as gone; no holder
	// outlives that crash. On a remote file system (or one lockctl does
	// not know) the server can lose the rename while this host runs on as
	// the holder, and another host would take the lock too: there it is
	// made durable.
	l.syncPublish = err != nil || fs.Remote
	return nil
}

// firstRecord makes the holder's record where it can be made before the
// build (a reservation's, with grace > 0), and returns the token the build
// names. With opts.Start the holder's pid, which the record's token
// carries, is not known until the build exists, and the build takes a
// token of its maker, this process.
func (l *Lock) firstRecord(opts Options, grace time.Duration) (token string, err error) {
	if opts.Start != nil {
		return newToken(selfPid), nil
	}
	if l.Holder, err = holder(l.kern, opts); err != nil {
		return "", fmt.Errorf("cannot acquire %s: %w", l.Path, err)
	}
	if grace > 0 {
		if err := reserveFor(l.host, &l.Holder, grace); err != nil {
			return "", fmt.Errorf("cannot reserve %s: %w", l.Path, err)
		}
	}
	return l.Holder.Token, nil
}

// makeBuild makes the empty build directory <lock>.new.<token>.<maker
// pid>.ns<inode>. The build names its maker: once this process is gone it
// is debris, whoever the record names as holder. It ends with the maker's
// pid namespace, as a break claim does: a build killed before its record
// was written carries nothing else to tell a reader in another namespace
// whose pid it names.
func (l *Lock) makeBuild(d fsx.Dir, token string) (string, error) {
	tmp := fmt.Sprintf("%s.new.%s.%d%s", l.name, token, selfPid, scan.NSSuffix(l.host.PidNS))
	if err := d.Mkdir(tmp, 0o755); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			// Not the build's own name, which means nothing to an
			// operator: the directory, and why.
			return "", fmt.Errorf("cannot acquire %s: cannot make a lock in %s (%w): run as a user who may write there, or use a registry this user owns", l.Path, d.Path(), errors.Unwrap(err))
		}
		return "", fmt.Errorf("cannot acquire %s: %w", l.Path, err)
	}
	return tmp, nil
}

// flockBuilt takes the kernel lock on the built directory tmp before it is
// published, so that the lock directory carries it from its first moment
// under the lock's name: flock(1) on the path then waits while the lock is
// held, and doctor names the holder from the kernel too. It adds evidence
// and replaces nothing: the record and its fence still decide.
func (l *Lock) flockBuilt(d fsx.Dir, tmp string) error {
	f, err := d.OpenDirFile(tmp)
	if err != nil {
		return err
	}
	if err := tryFlock(f); err != nil {
		f.Close()
		if errors.Is(err, errNoKernelLocks) {
			return nil
		}
		return fmt.Errorf("cannot flock %s: %w", d.Join(tmp), err)
	}
	l.kernel = f
	l.opens = newOpenWatch(f)
	return nil
}

// dropKernel closes the lock directory's descriptor, releasing this
// process's flock on it.
func (l *Lock) dropKernel() {
	if l.kernel != nil {
		l.kernel.Close()
		l.kernel = nil
	}
}

// build writes the record into the fresh directory tmp and fsyncs both.
func (l *Lock) build(d fsx.Dir, tmp string) error {
	t, err := d.OpenDir(tmp)
	if err != nil {
		return err
	}
	defer t.Close()
	if l.recInfo, err = t.Create("holder", l.record, 0o644); err != nil {
		return err
	}
	return t.Sync()
}

// removeBuilt removes an unpublished record directory.
func removeBuilt(d fsx.Dir, tmp string) { _ = d.RemoveWith(tmp, "holder") }

func (l *Lock) at(p Point) {
	if l.hook != nil {
		l.hook(p)
	}
}

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
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/fix"
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

// split checks that path can name a lock and splits it into the lock's
// absolute path, its directory and its name, the directory resolved
// (resolveDir).
func split(path string) (abs, dir, name string, err error) {
	abs, dir, name, err = splitName(path)
	if err != nil {
		return "", "", "", err
	}
	if dir, err = resolveDir(path, dir); err != nil {
		return "", "", "", err
	}
	return filepath.Join(dir, name), dir, name, nil
}

// openLockDir opens the directory of the lock path, resolved as split
// does, and returns it with the lock's absolute path and name. It opens the
// directory as given first, without following anything: only where that
// fails does it resolve symbolic links, so the common case costs one open.
func openLockDir(path string) (d fsx.Dir, abs, name string, err error) {
	abs, dir, name, err := splitName(path)
	if err != nil {
		return fsx.Dir{}, "", "", err
	}
	if d, err = fsx.OpenDir(dir); err == nil {
		return d, abs, name, nil
	}
	real, err := resolveDir(path, dir)
	if err != nil {
		return fsx.Dir{}, abs, name, err
	}
	abs = filepath.Join(real, name)
	d, err = fsx.OpenDir(real)
	return d, abs, name, err
}

// splitName checks that path can name a lock, and splits it into the
// lock's absolute path, its directory as given, and its name.
func splitName(path string) (abs, dir, name string, err error) {
	bad := func(why string, args ...any) (string, string, string, error) {
		return "", "", "", &BadPathError{Path: path, Why: fmt.Sprintf(why, args...)}
	}
	switch base := filepath.Base(path); {
	case path == "":
		return bad("names no lock: give the lock's path, such as /run/lock/app.lock")
	case strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)):
		return bad("ends in /, so it names a directory, not a lock: name the lock inside it, such as %s", filepath.Join(path, "app.lock"))
	case base == "." || base == "..":
		return bad("names a directory, not a lock: name the lock inside it, such as %s", filepath.Join(path, "app.lock"))
	}
	if lock, ok := scan.SideOf(filepath.Base(path)); ok {
		// doctor would read such a lock as a claim of that lock, and
		// --fix could finish the claim: remove it while it is held.
		return bad("is named as a side file of the lock %s (its build, claim or release), and doctor would read it as one: choose a name without lockctl's markers (.new. .dead. .pub. .rel. .holder)", lock)
	}
	if abs, err = filepath.Abs(path); err != nil {
		return "", "", "", err
	}
	dir, name = filepath.Split(abs)
	return abs, filepath.Clean(dir), name, nil
}

// resolveDir resolves the lock's directory dir (path is the lock's path,
// as given). It may be reached through symbolic links (/var/lock ->
// /run/lock on Debian and Fedora, or any link the operator made): they are
// followed here, once, to a directory, and from then on everything is
// relative to that directory's descriptor and follows nothing.
func resolveDir(path, dir string) (string, error) {
	bad := func(why string, args ...any) (string, error) {
		return "", &BadPathError{Path: path, Why: fmt.Sprintf(why, args...)}
	}
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return bad("is in a directory that does not exist (%s): make it first (mkdir -p -- %s), or name a lock in one that does", dir, shellWord(dir))
	}
	if err != nil {
		return "", fmt.Errorf("the lock's directory %s: %w", dir, err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return bad("is not in a directory: %s is not one", dir)
	}
	return real, nil
}

// shellWord quotes s for a POSIX shell where it needs it (report.ShellQuote
// is the full one; this package stays free of the report's dependencies).
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:,=@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CheckPath says why path cannot name a lock, as *BadPathError, or nil:
// what Acquire and ReleaseFor refuse before they touch anything.
func CheckPath(path string) error {
	_, _, _, err := split(path)
	var bad *BadPathError
	if errors.As(err, &bad) {
		return err
	}
	return nil
}

// roomForSides refuses a lock name that leaves too little room below the
// file system's name limit for lockctl's side files (scan.SideRoom): such a
// lock could be taken, but once its holder died no claim could be made to
// break it, and it would be wedged for good.
func roomForSides(fs fsx.FS, path, name string) error {
	if fs.NameMax <= 0 || len(name)+scan.SideRoom <= fs.NameMax {
		return nil
	}
	return &BadPathError{Path: path, Why: fmt.Sprintf("has a name of %d bytes; lockctl's side files add up to %d more, beyond this file system's limit of %d (%s), so once its holder died the lock could never be broken: use a name of at most %d bytes", len(name), scan.SideRoom, fs.NameMax, fs.Name, fs.NameMax-scan.SideRoom)}
}

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
	longest := name
	if opts.Slots > 1 {
		paths, err := SlotPaths(abs, opts.Slots)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			l.slots = append(l.slots, filepath.Base(p))
		}
		longest = l.slots[len(l.slots)-1]
	}
	fs, err := d.FS()
	if err == nil {
		if err := roomForSides(fs, path, longest); err != nil {
			return nil, err
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
	// The build names its token. With opts.Start the holder's pid, which
	// the record's token carries, is not known until the build exists, and
	// the build takes a token of its maker, this process.
	token := ""
	if opts.Start == nil {
		if l.Holder, err = holder(k, opts); err != nil {
			return nil, fmt.Errorf("cannot acquire %s: %w", abs, err)
		}
		if grace > 0 {
			if err := reserveFor(host, &l.Holder, grace); err != nil {
				return nil, fmt.Errorf("cannot reserve %s: %w", abs, err)
			}
		}
		token = l.Holder.Token
	} else {
		token = newToken(selfPid)
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

// publish puts the built lock tmp in place, judging the lock that stands
// there on every try and breaking it only when its holder is gone, until
// ctx is done. published says the build was renamed into place (and is no
// longer to be removed), even when the error after it says the lock could
// not be made durable.
func (l *Lock) publish(ctx context.Context, d fsx.Dir, tmp string) (published bool, err error) {
	abs, dir := l.Path, l.dir
	names := l.slots
	if len(names) == 0 {
		names = []string{l.name}
	}
	// Every try asks the kernel afresh (judges.Acquire says why).
	judge := l.kern.AcquireJudge(l.host)
	fixer := &fix.Fixer{Judge: judge, Pid: selfPid}
	wait := time.Millisecond
	var last verdict.Result
	var notBroken string // why the last sweep of a gone lock kept it
	tell := waitTeller(l.waiting)
	// w fires when the lock directory of inode watchIno is removed or
	// moved away: a release, or a break. (With slots, the wait polls.)
	var w *watch
	var watchIno uint64
	defer func() { w.Close() }()

	// try publishes the build at name, or judges what holds name and
	// breaks it if gone: again says to try name once more at once.
	try := func(name string) (published, again bool, err error) {
		slotPath := d.Join(name)
		// Publish: the rename succeeds only if nothing, not even an empty
		// directory, stands at the lock's name.
		l.name = name
		err = d.RenameNoReplace(tmp, d, name)
		if errors.Is(err, fsx.ErrNoReplaceUnsupported) {
			err = l.publishByMkdir(d, tmp)
		}
		switch {
		case err == nil:
			l.Path = slotPath
			if err := l.settle(d); err != nil {
				return true, false, err
			}
			l.at(Published)
			return true, false, nil
		case !errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY):
			return false, false, fmt.Errorf("cannot acquire %s: %w", slotPath, err)
		}
		// Held. Judge it as doctor would, and break it only if gone.
		cur, err := scan.ReadOne(dir, name)
		if err != nil {
			return false, false, fmt.Errorf("cannot acquire %s: %w", slotPath, err)
		}
		if cur == nil {
			// Released since the rename: try again at once.
			return false, true, nil
		}
		res := judge.Judge(cur)
		if h := res.Holder; len(names) == 1 && res.Verdict == verdict.Live && h != nil && !h.Reserved && !l.Holder.Reserved && h.Pid == l.Holder.Pid && h.HasStart && h.Start == l.Holder.Start && h.Pid != int64(selfPid) {
			// Another process, which holds it, asks again (lockctl
			// acquire from a shell that holds it): it waits on lockctl,
			// so waiting would wait on itself. (A goroutine of this
			// process may wait for another to release.)
			return false, false, &AlreadyHeldError{Path: slotPath, Holder: *h}
		}
		if cur.KernelLock != "" {
			// Held or free, it is a kernel lock: no directory lock can
			// ever stand there, and waiting would wait for ever.
			return false, false, fmt.Errorf("cannot acquire %s as a directory lock: it is a kernel-lock file of %s (%s); take it as one with 'lockctl run --kind flock'", slotPath, cur.KernelLock, res.Reason)
		}
		if notALock(cur) {
			// A directory of other things (a project, /tmp): it will
			// never be released, and waiting would wait for ever.
			return false, false, &BadPathError{Path: slotPath, Why: fmt.Sprintf("is a directory that holds %d entries and no lock record, so it is not a lock: name a lock inside it, such as %s", len(cur.Others), filepath.Join(slotPath, "app.lock"))}
		}
		fixer.Debris(res) // builds left by waiters that are gone
		if res.Verdict == verdict.Gone || res.Verdict == verdict.Claimed && len(res.Remove) > 0 {
			switch o := fixer.Fix(res); o.Action {
			case fix.Kept:
				notBroken = o.Reason
			case fix.Removed, fix.Restored, fix.Skipped:
				// Swept, or someone else changed it first: look again now.
				again = true
			}
		}
		last = res
		tell(whoHolds(res))
		if len(names) == 1 && cur.Kind == scan.KindDir && (w == nil || cur.Info.Ino != watchIno) {
			w.Close()
			w, watchIno = releaseWatch(slotPath), cur.Info.Ino
		}
		return false, again, nil
	}

	for quick := 0; ; {
		retry := false
		for _, name := range names {
			done, again, err := try(name)
			if done || err != nil {
				return done, err
			}
			retry = retry || again
		}
		// A few quick tries again, before waiting (and looking at ctx).
		if quick++; retry && quick < 4 {
			continue
		}
		quick = 0
		select {
		case <-ctx.Done():
			if last.Verdict == verdict.Gone && notBroken != "" {
				return false, &GoneError{Path: abs, Reason: last.Reason, Why: notBroken, Err: ctx.Err()}
			}
			if len(names) > 1 {
				return false, &SlotsHeldError{Path: abs, Slots: len(names), Last: waitError(d.Join(names[len(names)-1]), last, ctx.Err())}
			}
			return false, waitError(abs, last, ctx.Err())
		case <-w.fired():
			// Released or broken: try again now.
			w.Close()
			w, watchIno = nil, 0
			continue
		case <-time.After(wait/2 + rand.N(wait)):
		}
		wait = min(wait*2, 50*time.Millisecond)
	}
}

// notALock reports whether l is a directory that no lock format explains:
// entries inside, and no record, writer evidence or side file of a lock.
func notALock(l *scan.Lock) bool {
	for _, c := range l.Claims {
		if c.Kind != scan.ClaimBuild { // builds are waiting acquirers, this one among them
			return false
		}
	}
	return l.Kind == scan.KindDir && l.Err == nil && len(l.Others) > 0 && len(l.Holders) == 0 &&
		len(l.Writers) == 0 && len(l.Pending) == 0
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

// publishByMkdir is the fallback where the file system cannot rename
// without replacing: make the lock directory, then move the record into it.
// Between the two steps the lock is empty, and a crash there leaves an
// owner-less lock (which doctor reports and nothing breaks automatically).
func (l *Lock) publishByMkdir(d fsx.Dir, tmp string) (err error) {
	if err := d.Mkdir(l.name, 0o755); err != nil {
		return err
	}
	made, err := d.Lstat(l.name)
	if err != nil {
		return err
	}
	defer func() {
		// The record could not be put in: take back the empty directory
		// just made, lest it stand as an owner-less lock nothing breaks.
		// Only that directory, and only while empty (rmdir refuses else).
		if err != nil {
			if st, serr := d.Lstat(l.name); serr == nil && made.Same(st) {
				_ = d.Rmdir(l.name)
			}
		}
	}()
	if l.kernel != nil {
		// This directory, not the build, is the lock: the flock moves to it.
		f, err := d.OpenDirFile(l.name)
		if err != nil {
			return err
		}
		if err := tryFlock(f); err != nil {
			f.Close()
			return err
		}
		l.dropKernel()
		l.kernel = f
	}
	t, err := d.OpenDir(tmp)
	if err != nil {
		return err
	}
	defer t.Close()
	in, err := d.OpenDir(l.name)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := t.Link("holder", in, "holder"); err != nil {
		return err
	}
	removeBuilt(d, tmp)
	return nil
}

// settle makes the published lock durable and remembers what it is.
func (l *Lock) settle(d fsx.Dir) error {
	if l.syncPublish {
		if err := d.Sync(); err != nil {
			return fmt.Errorf("cannot acquire %s: %w", l.Path, err)
		}
	}
	st, err := d.Lstat(l.name)
	if err != nil {
		return fmt.Errorf("cannot acquire %s: %w", l.Path, err)
	}
	l.dirInfo = st
	return nil
}

// removeBuilt removes an unpublished record directory.
func removeBuilt(d fsx.Dir, tmp string) { _ = d.RemoveWith(tmp, "holder") }

func (l *Lock) at(p Point) {
	if l.hook != nil {
		l.hook(p)
	}
}

// waitTeller returns what a wait calls with who holds the lock on each
// try: it passes that on to waiting once the wait has lasted a second, and
// again whenever it changes.
func waitTeller(waiting func(string)) func(who string) {
	if waiting == nil {
		return func(string) {}
	}
	start, told := time.Now(), ""
	return func(who string) {
		if who != told && time.Since(start) >= time.Second {
			told = who
			waiting(who)
		}
	}
}

// whoHolds says in words who holds the lock res judged.
func whoHolds(res verdict.Result) string {
	h := res.Holder
	if h == nil && len(res.Kernel) > 0 && res.Kernel[0].Pid > 0 {
		h = &scan.Holder{Pid: int64(res.Kernel[0].Pid), Command: res.Kernel[0].Comm}
	}
	if res.Verdict == verdict.Live && h != nil && h.Reserved {
		// Not the reason, whose time left changes on every try: the
		// note is said again only when who holds the lock changes.
		s := "reserved for a worker"
		if !res.ReservedUntil.IsZero() {
			s += " until " + res.ReservedUntil.UTC().Format("15:04:05")
		}
		s += fmt.Sprintf(" (by pid %d", h.Pid)
		if h.Command != "" {
			s += ", " + h.Command
		}
		return s + ")"
	}
	if res.Verdict == verdict.Live && h != nil {
		s := fmt.Sprintf("held by pid %d", h.Pid)
		if h.Command != "" {
			s += " (" + h.Command + ")"
		}
		return s
	}
	return fmt.Sprintf("%s: %s", res.Verdict, res.Reason)
}

func waitError(path string, res verdict.Result, err error) error {
	switch res.Verdict {
	case verdict.Live:
		e := &HeldError{Path: path, Reason: res.Reason, Err: err}
		if res.Holder != nil {
			e.Holder = *res.Holder
		} else if k := res.Kernel; len(k) > 0 && k[0].Pid > 0 {
			e.Holder = scan.Holder{Pid: int64(k[0].Pid), PidText: strconv.Itoa(k[0].Pid), Command: k[0].Comm}
		}
		return e
	case verdict.Ownerless:
		l := res.Lock
		empty := l != nil && l.Kind == scan.KindFile && l.Format == scan.FormatEmpty
		return &OwnerlessError{Path: path, Reason: res.Reason, Remove: res.Remove, EmptyFile: empty, Err: err}
	case verdict.Foreign:
		return &ForeignError{Path: path, Reason: res.Reason, Err: err}
	case "":
		return fmt.Errorf("timed out acquiring %s: %w", path, err)
	}
	return &UnknownError{Path: path, Reason: fmt.Sprintf("%s: %s", res.Verdict, res.Reason), Err: err}
}

// Release removes this holder's lock. It claims the record by renaming it
// out of the lock directory, checks that the claimed file is the inode and
// the bytes this holder wrote, and only then removes the directory. If the
// record was replaced (the lock was broken and taken over), everything is
// left in place and *TakenOverError is returned.
func (l *Lock) Release() error {
	// The kernel lock goes last, once the directory is removed (or left to
	// its new owner): a flock(1) waiter proceeds only then.
	defer l.dropKernel()
	d, err := fsx.OpenDir(l.dir)
	if err != nil {
		return fmt.Errorf("cannot release %s: %w", l.Path, err)
	}
	defer d.Close()
	in, err := d.OpenDir(l.name)
	if errors.Is(err, fs.ErrNotExist) {
		return &TakenOverError{Path: l.Path, Reason: "the lock is gone: it was broken by someone else"}
	}
	if err != nil {
		return fmt.Errorf("cannot release %s: %w", l.Path, err)
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil || !l.dirInfo.Same(st) {
		return &TakenOverError{Path: l.Path, Reason: "the lock directory was replaced: it was broken and taken by someone else"}
	}
	// Look before touching: a record that is not ours is left untouched.
	if data, st, _, err := in.ReadFile("holder", scan.MaxRecord); err != nil || !st.SameFile(l.recInfo) || string(data) != string(l.record) {
		return &TakenOverError{Path: l.Path, Reason: "the record in it is not the one this holder wrote"}
	}
	// The claim names this releaser apart from the holder, so that a
	// release abandoned by a releaser that is gone can be finished.
	claim := fmt.Sprintf("%s.rel.%s.%d", l.name, l.Holder.Token, selfPid)
	// On NFS and the like, a link and an unlink: for a moment the record
	// has both names; then only the claim's.
	err = in.MoveNoReplace("holder", d, claim)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &TakenOverError{Path: l.Path, Reason: "the record vanished: the lock was broken by someone else"}
		}
		return fmt.Errorf("cannot release %s: %w", l.Path, err)
	}
	l.at(ReleaseClaimed)
	back := func(why string) error {
		err := d.MoveNoReplace(claim, in, "holder")
		if err != nil {
			return fmt.Errorf("cannot release %s: %s, and the record could not be put back (%v): it is kept in %s", l.Path, why, err, filepath.Join(l.dir, claim))
		}
		return &TakenOverError{Path: l.Path, Reason: why}
	}
	// The claimed file must be ours, inode and bytes: if the lock changed
	// hands between the look and the claim, it goes straight back.
	data, st, _, err := d.ReadFile(claim, scan.MaxRecord)
	if err != nil || !st.SameFile(l.recInfo) || string(data) != string(l.record) {
		return back("the record in it is not the one this holder wrote")
	}
	// rmdir works by name: check the name still holds the directory this
	// holder published, so that it can never remove someone else's.
	if st, err := d.Lstat(l.name); err != nil || !l.dirInfo.Same(st) {
		return back("the lock directory was replaced while it was being released")
	}
	if err := d.Rmdir(l.name); err != nil {
		if e := back("the lock directory could not be removed"); !errors.As(e, new(*TakenOverError)) {
			return e
		}
		return fmt.Errorf("cannot release %s: %w", l.Path, err)
	}
	l.at(ReleaseRemoved)
	if err := d.Remove(claim); err != nil {
		return fmt.Errorf("released %s, but its claim could not be removed: %w", l.Path, err)
	}
	return nil
}

// ReleaseFor releases the lock at path on behalf of pid, which must be the
// holder the record names, with the start time the record carries: any other
// process gets *NotHolderError and nothing is touched. It is how a process
// other than the one that called Acquire (lockctl release, on behalf of a
// shell) releases a lock.
//
// hook, if given, is called at each release Point (tests only).
func ReleaseFor(path string, pid int, k Kernel, hook ...func(Point)) error {
	k = kernelOr(k)
	abs, dir, name, err := split(path)
	if err != nil {
		return err
	}
	cur, err := scan.ReadOne(dir, name)
	if err != nil {
		return fmt.Errorf("cannot release %s: %w", abs, err)
	}
	if cur != nil && len(cur.Holders) == 0 {
		// The record is already out of the lock: a release of the caller's
		// was interrupted. Finish it, or put the record back and release
		// it again, if it is the caller's.
		done, err := finishOwnRelease(k, cur, pid)
		if done || err != nil {
			return err
		}
		if cur, err = scan.ReadOne(dir, name); err != nil {
			return fmt.Errorf("cannot release %s: %w", abs, err)
		}
	}
	if cur == nil || cur.Kind == scan.KindMissing {
		return fmt.Errorf("cannot release %s: there is no lock there", abs)
	}
	if cur.Format != scan.FormatLockctl {
		return fmt.Errorf("cannot release %s: it is not a lock lockctl took (format %s)", abs, cur.Format)
	}
	if len(cur.Holders) != 1 || cur.Holders[0].Holder == nil {
		// Its record was claimed away (a release or a break under way, or
		// abandoned): there is nothing of the caller's to release.
		return fmt.Errorf("cannot release %s: it holds no usable record (a release or break is under way or was abandoned); 'lockctl doctor %s' says which", abs, abs)
	}
	rec := cur.Holders[0]
	h := *rec.Holder
	start, err := k.Start(pid)
	host := k.Host()
	if err != nil || h.Pid != int64(pid) || h.Start != start || h.BootID != host.BootID || h.PidNS != host.PidNS {
		return &NotHolderError{Path: abs, Pid: pid, Holder: h}
	}
	l := &Lock{Path: abs, Holder: h, dir: dir, name: name, record: rec.Raw, recInfo: rec.Info, dirInfo: cur.Info}
	if len(hook) > 0 {
		l.hook = hook[0]
	}
	return l.Release()
}

// finishOwnRelease finishes a release of pid's lock that was interrupted
// after its record was claimed out of the lock: it reports done when such a
// release was found and finished. A claim holding someone else's record is
// *NotHolderError; anything unfinished is left as it is.
func finishOwnRelease(k Kernel, cur *scan.Lock, pid int) (bool, error) {
	start, err := k.Start(pid)
	if err != nil {
		return false, nil
	}
	host := k.Host()
	mine := false
	for _, c := range cur.Claims {
		h := c.Record.Holder
		if c.Kind != scan.ClaimRelease || h == nil || c.Record.Format() != scan.FormatLockctl {
			continue
		}
		if h.Pid != int64(pid) || h.Start != start || h.BootID != host.BootID || h.PidNS != host.PidNS {
			return false, &NotHolderError{Path: cur.Path, Pid: pid, Holder: *h}
		}
		mine = true
	}
	if !mine {
		return false, nil
	}
	judge := k.ReleaseJudge(host)
	res := judge.Judge(cur)
	if res.Verdict != verdict.Claimed || len(res.Remove) == 0 {
		return false, fmt.Errorf("cannot release %s: a release of it is under way (%s)", cur.Path, res.Reason)
	}
	fixer := &fix.Fixer{Judge: judge, Pid: selfPid}
	switch o := fixer.Fix(res); {
	case o.Action == fix.Restored:
		return false, nil // the record is back: release it as usual
	case o.Action != fix.Removed && !o.Gone:
		return false, fmt.Errorf("cannot finish the interrupted release of %s: %s", cur.Path, o.Reason)
	}
	return true, nil
}

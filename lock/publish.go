package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// publish puts the built lock tmp in place, judging the lock that stands
// there on every try and breaking it only when its holder is gone, until
// ctx is done. published says the build was renamed into place (and is no
// longer to be removed), even when the error after it says the lock could
// not be made durable.
func (l *Lock) publish(ctx context.Context, d fsx.Dir, tmp string) (published bool, err error) {
	p := l.publisher(d, tmp)
	defer func() { p.w.Close() }()
	wait := time.Millisecond
	for quick := 0; ; {
		retry := false
		for _, name := range p.names {
			done, again, err := p.try(name)
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
			return false, p.waitError(ctx.Err())
		case <-p.w.fired():
			// Released or broken: try again now.
			p.w.Close()
			p.w, p.watchIno = nil, 0
			continue
		case <-time.After(wait/2 + rand.N(wait)):
		}
		wait = min(wait*2, 50*time.Millisecond)
	}
}

// publisher is one publish of a build: where it goes, the judge of its
// tries, and what the tries have seen. It is not safe for concurrent use.
type publisher struct {
	l        *Lock
	d        fsx.Dir
	tmp      string
	abs, dir string
	names    []string // the names to try: the lock's, or its slots'
	judge    *verdict.Judge
	fixer    *fix.Fixer
	last     verdict.Result
	// notBroken is why the last sweep of a gone lock kept it.
	notBroken string
	tell      func(who string)
	// slotWho is who holds each slot, as last judged: a wait on a
	// counting lock tells the set, so that it speaks when the set of
	// holders changes, not at every slot it tries.
	slotWho map[string]string
	// w fires when the lock directory of inode watchIno is removed or
	// moved away: a release, or a break. (With slots, the wait polls.)
	w        *watch
	watchIno uint64
}

// publisher begins the publish of the build tmp in d.
func (l *Lock) publisher(d fsx.Dir, tmp string) *publisher {
	names := l.slots
	if len(names) == 0 {
		names = []string{l.name}
	}
	// Every try asks the kernel afresh: judges.Acquire is the judge, and
	// says why (and what of the kernel's evidence it asks).
	judge := l.kern.AcquireJudge(l.host)
	return &publisher{
		l: l, d: d, tmp: tmp, abs: l.Path, dir: l.dir, names: names,
		judge: judge, fixer: &fix.Fixer{Judge: judge, Pid: selfPid}, tell: waitTeller(l.waiting),
	}
}

// try publishes the build at name, or judges what holds name and breaks
// it if gone: again says to try name once more at once.
func (p *publisher) try(name string) (published, again bool, err error) {
	l, d, tmp := p.l, p.d, p.tmp
	slotPath := d.Join(name)
	// Publish: the rename succeeds only if nothing, not even an empty
	// directory, stands at the lock's name.
	l.name = name
	// The build's own opens so far are this process's: from here on, an
	// open of the lock directory is someone else's (openWatch).
	if _, ok := l.opens.opens(); !ok {
		l.opensSeen = true
	}
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
	again, err = p.held(name, slotPath)
	return false, again, err
}

// held judges the lock that stands at name as doctor would, and breaks it
// only if gone: again says to try name once more at once.
func (p *publisher) held(name, slotPath string) (again bool, err error) {
	l, dir, names := p.l, p.dir, p.names
	cur, err := scan.ReadOne(dir, name)
	if err != nil {
		return false, fmt.Errorf("cannot acquire %s: %w", slotPath, err)
	}
	if cur == nil {
		// Released since the rename: try again at once.
		return true, nil
	}
	res := p.judge.Judge(cur)
	if h := res.Holder; len(names) == 1 && res.Verdict == verdict.Live && h != nil && !h.Reserved && !l.Holder.Reserved && h.Pid == l.Holder.Pid && h.HasStart && h.Start == l.Holder.Start && h.Pid != int64(selfPid) {
		// Another process, which holds it, asks again (lockctl
		// acquire from a shell that holds it): it waits on lockctl,
		// so waiting would wait on itself. (A goroutine of this
		// process may wait for another to release.)
		return false, &AlreadyHeldError{Path: slotPath, Holder: *h}
	}
	if cur.KernelLock != "" {
		// Held or free, it is a kernel lock: no directory lock can
		// ever stand there, and waiting would wait for ever.
		return false, fmt.Errorf("cannot acquire %s as a directory lock: it is a kernel-lock file of %s (%s); take it as one with 'lockctl run --kind flock'", slotPath, cur.KernelLock, res.Reason)
	}
	if notALock(cur) {
		// A directory of other things (a project, /tmp): it will
		// never be released, and waiting would wait for ever.
		return false, &BadPathError{Path: slotPath, Why: fmt.Sprintf("is a directory that holds %d entries and no lock record, so it is not a lock: name a lock inside it, such as %s", len(cur.Others), filepath.Join(slotPath, "app.lock"))}
	}
	p.fixer.Debris(res) // builds left by waiters that are gone
	switch {
	case res.Verdict == verdict.Gone && scan.InPlace(cur) != "":
		// Its producers may rewrite it in place, so no claim can be
		// bound to it (docs/fix-protocol.md): never broken, and no
		// reason to look again before the next try.
		p.notBroken = scan.InPlaceRule
	case res.Verdict == verdict.Gone || res.Verdict == verdict.Claimed && len(res.Remove) > 0:
		switch o := p.fixer.Fix(res); o.Action {
		case fix.Kept:
			p.notBroken = o.Reason
		case fix.Removed, fix.Restored, fix.Skipped:
			// Swept, or someone else changed it first: look again now.
			again = true
		}
	}
	p.last = res
	p.tell(p.holders(name, whoHolds(res)))
	if len(names) == 1 && cur.Kind == scan.KindDir && (p.w == nil || cur.Info.Ino != p.watchIno) {
		p.w.Close()
		p.w, p.watchIno = releaseWatch(slotPath), cur.Info.Ino
	}
	return again, nil
}

// waitError is the error of a publish whose ctx ended (with err) while
// the lock was held: what held it, as last judged.
func (p *publisher) waitError(err error) error {
	if p.last.Verdict == verdict.Gone && p.notBroken != "" {
		return &GoneError{Path: p.abs, Reason: p.last.Reason, Why: p.notBroken, Err: err}
	}
	if len(p.names) > 1 {
		return &SlotsHeldError{Path: p.abs, Slots: len(p.names), Last: waitError(p.d.Join(p.names[len(p.names)-1]), p.last, err)}
	}
	return waitError(p.abs, p.last, err)
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
		// Another inode than the build's, opened again below: a release
		// of it looks at every process's open files.
		l.opens.close()
		l.opens = nil
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
	// Since the publishing rename, this process has not opened the lock
	// directory: any open is someone else's.
	if n, ok := l.opens.opens(); !ok || n != 0 {
		l.opensSeen = true
	}
	return nil
}

// holders is who holds the lock, for the wait's note: of a plain lock, who
// holds it; of a counting lock, every slot's holder, as last judged, in
// the slots' order.
func (p *publisher) holders(name, who string) string {
	if len(p.names) == 1 {
		return who
	}
	if p.slotWho == nil {
		p.slotWho = map[string]string{}
	}
	p.slotWho[name] = who
	var all []string
	for _, n := range p.names {
		if w, ok := p.slotWho[n]; ok {
			all = append(all, w)
		}
	}
	return strings.Join(all, "; ")
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
		// Where the kernel's evidence made it live (the recorded holder is
		// gone or a zombie, and a process holds its kernel lock), that
		// process is the holder to name, not the recorded one.
		// (A kernel lock whose taker has exited names no process: then
		// the reason says what is known.)
		if k := res.Kernel; len(k) > 0 {
			if k[0].Pid > 0 {
				e.Holder = scan.Holder{Pid: int64(k[0].Pid), PidText: strconv.Itoa(k[0].Pid), Command: k[0].Comm}
				e.ByKernel = true
			}
		} else if res.Holder != nil {
			e.Holder = *res.Holder
		}
		return e
	case verdict.Ownerless, verdict.Idle:
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

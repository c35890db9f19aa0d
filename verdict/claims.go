package verdict

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/scan"
)

// Judging side files: breaks and releases under way or abandoned, records
// being published, and the unpublished builds of lockctl's acquirers.

// debris lists the steps that remove the abandoned builds beside l: an
// unpublished build can only ever be published by the process that made
// it, so once that process is gone it is inert.
func (j *Judge) debris(l *scan.Lock) []Step {
	var steps []Step
	for _, c := range l.Claims {
		// The build directory is the side file itself; its record, read or
		// not (past the read limit), is not needed: the name says its maker.
		sub, _, _ := strings.Cut(c.Record.File, "/")
		if spentReservation(l, c) {
			if p := j.probeSide(l, c); p.State == StateAbsent || p.State == StateZombie {
				steps = append(steps, Step{Op: OpRemove, Path: filepath.Join(l.Dir, c.Record.File)})
			}
			continue
		}
		if c.Kind != scan.ClaimBuild || !c.Maker {
			continue
		}
		if _, inert := InertBuild(c); !inert {
			continue // not lockctl's: noted (notBuilds), never touched
		}
		if p := j.probeSide(l, c); p.State == StateAbsent || p.State == StateZombie {
			steps = append(steps, Step{Op: OpRemove, Path: filepath.Join(l.Dir, sub, "holder")}, Step{Op: OpRmdir, Path: filepath.Join(l.Dir, sub)})
		}
	}
	return steps
}

// InertBuild reports whether c, named as one of lockctl's unpublished
// lock builds (<lock>.new.<token>.<maker>), is one: a directory that is
// empty (its maker died before writing the record) or holds nothing but a
// holder file whose bytes are a lockctl record, whole or cut short (its
// maker was killed while writing it: lock.Lock.build).
// Anything else (a regular file of that name, a directory holding other
// files, a record of another format or token) is not lockctl's to remove,
// whatever its name says; why says what it is instead.
func InertBuild(c scan.Claim) (why string, inert bool) {
	sub, _, _ := strings.Cut(c.Record.File, "/")
	switch {
	case c.Kind != scan.ClaimBuild:
		return "it is not a build", false
	case errors.Is(c.Record.Err, scan.ErrNotRead):
		// Past scan's read limit: not examined here, and judged by its
		// name alone. fix.Debris examines each before it touches it.
		return "", true
	case !strings.HasSuffix(c.Record.File, "/holder"):
		// ReadSideDir names the record sub/holder; any other kind of file
		// is read as itself.
		return fmt.Sprintf("%s is not a directory", quoteName(sub)), false
	case len(c.Others) > 0:
		return fmt.Sprintf("%s holds %s besides a record", quoteName(sub), quoteName(strings.Join(c.Others, ", "))), false
	case errors.Is(c.Record.Err, fs.ErrNotExist):
		return "", true // made, and its maker died before writing the record
	}
	var fe *scan.FormatError
	if c.Record.Err != nil && !errors.As(c.Record.Err, &fe) {
		return fmt.Sprintf("its record %s cannot be read (%s)", quoteName(c.Record.File), errText(c.Record.Err)), false
	}
	if lockctlRecordHead(string(c.Record.Raw)) {
		return "", true
	}
	return fmt.Sprintf("its record %s is not a lockctl record", quoteName(c.Record.File)), false
}

// lockctlRecordHead reports whether raw begins as lockctl's record does,
// or is such a beginning cut short: the magic line, then a token line. The
// token is not the build's own where lockctl run builds the record of the
// command it starts (whose token that process's pid leads), so any token
// of the shape lockctl writes will do.
func lockctlRecordHead(raw string) bool {
	for _, magic := range []string{scan.LockctlMagic, scan.ReserveMagic} {
		if strings.HasPrefix(magic+"\n", raw) {
			return true // cut short within the magic line
		}
		rest, ok := strings.CutPrefix(raw, magic+"\n")
		if !ok {
			continue
		}
		line, whole := strings.CutPrefix(rest, "token ")
		if !whole {
			return strings.HasPrefix("token ", rest) // cut short there
		}
		tok, _, complete := strings.Cut(line, "\n")
		if !complete {
			return true // cut short within the token
		}
		_, valid := scan.ParseBToken(tok)
		return valid
	}
	return false
}

// notBuilds are notes on the side files named as lockctl's builds that are
// not (inertBuild): left alone, for an operator to inspect.
func notBuilds(l *scan.Lock) []string {
	var notes []string
	for _, c := range l.Claims {
		if c.Kind != scan.ClaimBuild {
			continue
		}
		if why, inert := InertBuild(c); !inert {
			sub, _, _ := strings.Cut(c.Record.File, "/")
			notes = append(notes, fmt.Sprintf("%s is named like a lock build of lockctl's, but %s: lockctl leaves it alone; inspect it by hand", quoteName(filepath.Join(l.Dir, sub)), why))
		}
	}
	return notes
}

// spentReservation reports whether c is a reservation claimed out of l by
// an adoption or a release (lockctl adopt, lockctl release --token) that
// got as far as the lock holding another record: the worker's, or a later
// holder's once the released lock was taken again. The reservation can
// never go back without destroying that record, so once its claimer is
// gone the claim is debris.
func spentReservation(l *scan.Lock, c scan.Claim) bool {
	h := c.Record.Holder
	if c.Kind != scan.ClaimRelease || !c.Maker || h == nil || !h.Reserved || l.Kind != scan.KindDir || len(l.Holders) != 1 {
		return false
	}
	cur := l.Holders[0].Holder
	return cur != nil && cur.Token != h.Token
}

// claimed judges a lock with no holder but with claims or staging beside it:
// a break or release under way, or abandoned. It also judges side files
// whose lock no longer exists.
func (j *Judge) claimed(r Result) Result {
	l := r.Lock
	if l.Kind == scan.KindMissing {
		if res, ok := j.onlyBuilds(r); ok {
			return res
		}
	}
	var claims []scan.Claim
	for _, c := range l.Claims {
		if l.Kind != scan.KindMissing && (c.Kind != scan.ClaimBreak && c.Kind != scan.ClaimRelease || !belongs(l, c)) {
			continue
		}
		claims = append(claims, c)
		if r.Modified.IsZero() || c.Record.Info.Mtime.Before(r.Modified) {
			r.Modified = c.Record.Info.Mtime
		}
	}
	r.Verdict = Claimed
	if len(claims) != 1 {
		return j.claimedMany(r, claims)
	}
	return j.claimedOne(r, claims[0])
}

// onlyBuilds judges side files without a lock when all are lockctl's
// unpublished builds: acquirers waiting for the lock, or the debris of ones
// that are gone (Result.Debris). ok is false when other side files remain.
func (j *Judge) onlyBuilds(r Result) (Result, bool) {
	l := r.Lock
	builds, waiting, foreign := 0, 0, 0
	for _, c := range l.Claims {
		if c.Kind == scan.ClaimBuild {
			builds++
			if _, inert := InertBuild(c); !inert {
				foreign++
			} else if p := j.probeSide(l, c); p.State == StateRunning || p.State == StateUnknown {
				waiting++
			}
		}
	}
	if builds == len(l.Claims) {
		// No lock, only locks being built: by acquirers waiting for it,
		// or debris of ones that are gone (Result.Debris).
		r.Verdict = Claimed
		r.Reason = fmt.Sprintf("no lock, only %d unpublished %s: %d by acquirers still running, %d abandoned", builds-foreign, plural(builds-foreign, "build", "builds"), waiting, builds-foreign-waiting)
		if foreign > 0 {
			r.Reason += fmt.Sprintf(", and %d %s named like one that %s not lockctl's", foreign, plural(foreign, "entry", "entries"), plural(foreign, "is", "are"))
		}
		for _, c := range l.Claims {
			if r.Modified.IsZero() || c.Record.Info.Mtime.Before(r.Modified) {
				r.Modified = c.Record.Info.Mtime
			}
		}
		return r, true
	}
	return r, false
}

// claimedOne judges a lock whose one side file c is a break, release or
// publish (or, with no lock left, any side file): under way, or abandoned,
// and then what finishing or undoing it takes.
func (j *Judge) claimedOne(r Result, c scan.Claim) Result {
	l := r.Lock
	by := j.probeSide(l, c)
	var rec judged
	switch {
	case c.Record.Err != nil:
		rec = j.record(l, &c.Record)
	default:
		rec = j.claimedRecord(l, c)
	}
	r.Holder = c.Record.Holder
	r.Started = rec.started
	what := map[scan.ClaimKind]string{scan.ClaimBreak: "a break", scan.ClaimRelease: "a release", scan.ClaimPublish: "a publish", scan.ClaimHolder: "a release", scan.ClaimBuild: "an acquire"}[c.Kind]
	state := fmt.Sprintf("%s of %s by %s", what, quoteName(c.Record.File), byWord(c.By, by))
	record := fmt.Sprintf("the record it holds is %s (%s)", rec.v, rec.reason)
	missing := ""
	if l.Kind == scan.KindMissing {
		missing = "the lock itself is gone; "
	}
	claimPath := filepath.Join(l.Dir, c.Record.File)
	switch by.State {
	case StateRunning, StateUnknown:
		r.Reason = fmt.Sprintf("%s%s is under way or its maker cannot be checked; %s", missing, state, record)
		return r
	}
	r.Reason = fmt.Sprintf("%s%s was abandoned; %s", missing, state, record)
	// An unpublished build whose maker is gone is inert, whatever the
	// record it holds says. (An abandoned release is not: its holder, if
	// alive, never learnt that it released, and still holds the lock.)
	intent := c.Maker && c.Kind == scan.ClaimBuild
	// A release that got as far as removing the lock is complete but for
	// its claim: with no lock left, removing the claim takes nothing.
	intent = intent || c.Maker && c.Kind == scan.ClaimRelease && l.Kind == scan.KindMissing
	switch {
	case rec.v == Gone || intent:
		if l.Kind == scan.KindDir && c.Kind != scan.ClaimPublish && c.Kind != scan.ClaimBuild {
			r.Remove = append(r.Remove, Step{Op: OpRmdir, Path: l.Path})
		}
		r.Remove = append(r.Remove, Step{Op: OpRemove, Path: claimPath})
		if sub := filepath.Dir(c.Record.File); sub != "." {
			// A record that was never published, in the directory it
			// was built in (<lock>.pub.<token>/holder).
			r.Remove = append(r.Remove, Step{Op: OpRmdir, Path: filepath.Join(l.Dir, sub)})
		}
	case rec.v == Live && (c.Kind == scan.ClaimBreak || c.Kind == scan.ClaimRelease && c.Maker):
		// A break, or a release by a releaser named apart from the holder,
		// abandoned with the holder alive: the record goes back, and the
		// holder holds its lock again.
		if to := restoreTarget(l, c); to != "" {
			r.Remove = []Step{{Op: OpRestore, Path: claimPath, To: to}}
		} else {
			r.Reason += "; it cannot be put back because the lock is gone: its holder may believe it still holds the lock"
		}
	case rec.v == Live && l.Kind == scan.KindMissing:
		r.Reason += "; the lock was removed while its holder runs, so that holder may believe it still holds the lock"
	}
	return r
}

// claimedMany judges a lock with several claims or staging files and no
// holder (two releases or breaks that both died, say). When every maker is
// gone and every record claimed is gone too, nothing is left to protect:
// the lock and all the side files can go. Otherwise it is left to a person,
// saying why.
func (j *Judge) claimedMany(r Result, claims []scan.Claim) Result {
	l := r.Lock
	var parts []string
	done := len(claims) > 0
	var steps []Step
	for _, c := range claims {
		by := j.probeSide(l, c)
		parts = append(parts, sideNoteOf(c, by))
		makerGone := by.State == StateAbsent || by.State == StateZombie
		if c.Kind == scan.ClaimBuild && c.Maker {
			// A build is debris once its maker is gone, whatever its record.
			done = done && makerGone
			sub, _, _ := strings.Cut(c.Record.File, "/")
			steps = append(steps, Step{Op: OpRemove, Path: filepath.Join(l.Dir, sub, "holder")}, Step{Op: OpRmdir, Path: filepath.Join(l.Dir, sub)})
			continue
		}
		var rec judged
		if c.Record.Err != nil || c.Record.Holder == nil {
			rec = j.record(l, &c.Record)
		} else {
			rec = j.claimedRecord(l, c)
		}
		if !makerGone || rec.v != Gone {
			done = false
			parts[len(parts)-1] += fmt.Sprintf(", holding a record that is %s", rec.v)
		}
		steps = append(steps, Step{Op: OpRemove, Path: filepath.Join(l.Dir, c.Record.File)})
		if sub := filepath.Dir(c.Record.File); sub != "." {
			steps = append(steps, Step{Op: OpRmdir, Path: filepath.Join(l.Dir, sub)})
		}
	}
	if !done {
		r.Reason = fmt.Sprintf("%d side files and no holder: %s; resolve them by hand", len(claims), strings.Join(parts, "; "))
		return r
	}
	r.Reason = fmt.Sprintf("%d side files, all abandoned by makers that are gone and all holding records of holders that are gone: %s", len(claims), strings.Join(parts, "; "))
	if l.Kind == scan.KindDir {
		r.Remove = append(r.Remove, Step{Op: OpRmdir, Path: l.Path})
	}
	r.Remove = append(r.Remove, steps...)
	return r
}

// claimedRecord judges the holder record a claim holds. A record of a gone
// holder that a running process still flocks (a pid file claimed by a
// break), or whose lock directory a running process still flocks (lockctl
// run's command, flock(1) on the path), is in use: live, so it goes back
// rather than away, as the same lock without the claim reads live.
func (j *Judge) claimedRecord(l *scan.Lock, c scan.Claim) judged {
	rec := j.holder(c.Record.Holder, c.Record.Format(), c.Record.Info, l.FS)
	if rec.v != Gone {
		return rec
	}
	// The claim may sit in a directory of its own (<lock>.pub.<token>/holder).
	by, held, doubt := j.lockedBy(filepath.Join(l.Dir, filepath.Dir(c.Record.File)), filepath.Base(c.Record.File), c.Record.Info)
	if !held && l.Kind == scan.KindDir {
		var d string
		by, held, d = j.lockedBy(l.Dir, l.Name, l.Info)
		if doubt == "" {
			doubt = d
		}
	}
	switch {
	case held:
		rec.v, rec.reason = Live, fmt.Sprintf("%s, but %s", rec.reason, by)
	case doubt != "":
		// "No lock on it" is not proved: held, never gone.
		rec.v, rec.reason = Unknown, fmt.Sprintf("%s, but whether a process holds a lock on it cannot be told: %s", rec.reason, doubt)
	}
	return rec
}

// unreadable reports whether a side file could not be read at all (as
// opposed to read and found malformed).
func unreadable(r scan.Record) bool {
	var fe *scan.FormatError
	return r.Err != nil && !errors.As(r.Err, &fe)
}

// belongs reports whether claim c can be about lock directory l. A claim
// holds a record written after its lock directory was made; one older than
// the directory was left by a break or release of an earlier lock at this
// path (whose directory is long gone), and finishing it would remove a
// directory made since by someone else.
func belongs(l *scan.Lock, c scan.Claim) bool {
	return l.Kind != scan.KindDir || !c.Record.Info.Mtime.Before(l.Info.Created())
}

// restoreTarget is where a claimed record goes back to, or "" if it cannot.
func restoreTarget(l *scan.Lock, c scan.Claim) string {
	if u := scan.UnitOfFormat(c.Record.Format()); u != nil && u.DirRecord != nil {
		// A lock directory's record goes back where its format keeps it.
		if p := u.DirRecord.Suffix(c.Record.Holder); l.Kind == scan.KindDir && p != "" {
			return l.Path + p
		}
		return ""
	}
	if l.Kind == scan.KindMissing {
		return l.Path
	}
	return ""
}

// probeSide asks about the process a side file names (its maker, or for a
// file named by a holder's token, that holder) in the pid namespace it is
// of: the one its name or record gives, this one for a generation B token
// whose record has this host's scope, or, where nothing says, any.
//
// On a network file system the name proves nothing about the machine: a
// namespace suffix such as .ns4026531836 is the initial pid namespace of
// every Linux machine. There the pid is asked about here only when the side
// file's record places it on this machine (sideHere); otherwise it is
// unknown, never absent.
func (j *Judge) probeSide(l *scan.Lock, c scan.Claim) Proc {
	if c.By <= 0 || c.By > j.Host.PidMax {
		return Proc{State: StateUnknown, Err: errors.New("the file name carries no usable pid")}
	}
	ns := c.NS
	scoped := false
	if h := c.Record.Holder; ns == "" && !c.Maker && h != nil && h.Scope != "" && h.Scope == j.Host.Scope {
		ns, scoped = j.Host.PidNS, true
	}
	if l.FS.Remote && !scoped {
		if why := j.sideHere(c); why != "" {
			return Proc{State: StateUnknown, Err: fmt.Errorf("%s is on a network file system (%s) that other machines may share, and %s: judge it on the machine that made it", quoteName(c.Record.File), l.FS.Name, why)}
		}
	}
	return j.probeIn(c.By, ns, l.FS.Remote)
}

// sideHere says why side file c, on a network file system, may have been
// made on another machine, or "" when its record places its pid on this
// one: it carries this boot's id, read where this reader's boot id is the
// kernel's (Host.BootIDErr), and names this host, if any. A name, its
// namespace suffix included, never does.
func (j *Judge) sideHere(c scan.Claim) string {
	h := c.Record.Holder
	switch {
	case h == nil:
		return "no record in it says which machine made it"
	case h.BootID == "":
		return "its record names no boot"
	case j.Host.BootIDErr != nil:
		return fmt.Sprintf("this reader's boot id is not the kernel's word (%v)", j.Host.BootIDErr)
	case h.BootID != j.Host.BootID:
		return fmt.Sprintf("its record is of boot %s, not this one", h.BootID)
	case h.Host != "" && !j.sameHost(h.Host):
		return fmt.Sprintf("its record names host %s", h.Host)
	}
	return ""
}

func (j *Judge) sideNote(l *scan.Lock, c scan.Claim) string { return sideNoteOf(c, j.probeSide(l, c)) }

// sideNoteOf is sideNote for a maker already probed: by.
func sideNoteOf(c scan.Claim, by Proc) string {
	return fmt.Sprintf("side file %s: %s by %s", quoteName(c.Record.File), c.Kind, byWord(c.By, by))
}

func byWord(pid int64, p Proc) string {
	switch {
	case pid <= 0:
		return "an unnamed process"
	case p.State == StateRunning:
		return fmt.Sprintf("pid %d (running)", pid)
	case p.State == StateZombie:
		return fmt.Sprintf("pid %d (a zombie)", pid)
	case p.State == StateAbsent:
		return fmt.Sprintf("pid %d (not running)", pid)
	}
	return fmt.Sprintf("pid %d (state unknown)", pid)
}

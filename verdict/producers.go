package verdict

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// The rules of the programs whose locks lockctl knows (scan's format
// rooms, scan/format_<producer>.go), each the program's own, so that
// lockctl never breaks what the program itself would not
// (docs/formats.md).

// producerRule is one producer's own rule, at the points of the judgement
// where it speaks; a nil hook says nothing there. A new producer adds one
// row to producerRules, beside its room in package scan.
type producerRule struct {
	// room is the producer's format room in package scan.
	room string
	// lock judges the lock by the producer's rule alone, before any
	// record is looked at; decided false leaves it to the records (git's
	// lock records no holder).
	lock func(j *Judge, r Result) (res Result, decided bool)
	// holder decides a record before its pid is looked at.
	holder func(j *Judge, h *scan.Holder) (jd judged, decided bool)
	// after revisits the verdict on the record's pid.
	after func(j *Judge, h *scan.Holder, jd judged) judged
	// gone revisits a lock whose holder is gone.
	gone func(j *Judge, r Result) Result
	// noRecord judges a lock that holds no record; decided false leaves
	// it owner-less.
	noRecord func(r Result) (res Result, decided bool)
}

// producerRules has one row for every producer scan knows (TestEveryFormat
// checks both ways), keyed by its name (scan.Lock.Producer).
var producerRules = map[string]producerRule{
	scan.ProducerGit:            {room: "scan/format_git.go", lock: (*Judge).gitRule},
	scan.ProducerPostgres:       {room: "scan/format_postgres.go", gone: (*Judge).postgresShm},
	scan.ProducerMercurial:      {room: "scan/format_mercurial.go", holder: mercurialNamespace},
	scan.ProducerEmacs:          {room: "scan/format_emacs.go", after: emacsBoot},
	scan.ProducerChromium:       {room: "scan/format_chromium.go"},
	scan.ProducerFirefox:        {room: "scan/format_firefox.go"}, // its address: record, in holders.go (Holder.HostAddr)
	scan.ProducerVim:            {room: "scan/format_vim.go", gone: vimUnsaved},
	scan.ProducerFilelock:       {room: "scan/format_filelock.go"}, // its start token is a fence like lockctl's own
	scan.ProducerGnuPG:          {room: "scan/format_gnupg.go", holder: gnupgNode},
	scan.ProducerShadow:         {room: "scan/format_shadow.go"}, // kill(pid, 0): the pid decides, as for any bare pid
	scan.ProducerXorg:           {room: "scan/format_xorg.go"},   // kill(pid, 0): the pid decides, as for any bare pid
	scan.ProducerLibreOffice:    {room: "scan/format_libreoffice.go", lock: (*Judge).libreOfficeRule},
	scan.ProducerTerraform:      {room: "scan/format_terraform.go", lock: (*Judge).terraformRule},
	scan.ProducerNano:           {room: "scan/format_nano.go"}, // another host's foreign, else its pid, as for vim
	scan.ProducerCcache:         {room: "scan/format_ccache.go", gone: ccacheQuiet},
	scan.ProducerProperLockfile: {room: "scan/format_proper_lockfile.go", noRecord: properLockfileRule},
	"dpkg":                      {room: "scan/format_dpkg.go"}, // kernel-lock files: kernelLock, in evidence_rules.go
	"apt":                       {room: "scan/format_apt.go"},
	"go":                        {room: "scan/format_gomod.go"},
	"cargo":                     {room: "scan/format_cargo.go"},
	"rustc":                     {room: "scan/format_rustc.go"},
	"java.util.logging":         {room: "scan/format_java.go"},
	"exim":                      {room: "scan/format_exim.go"},
}

// producerLock applies l's producer's rule that judges the whole lock.
func (j *Judge) producerLock(r Result) (Result, bool) {
	if f := producerRules[r.Lock.Producer].lock; f != nil {
		return f(j, r)
	}
	return r, false
}

// producerHolder applies a producer's rule that comes before any pid is
// looked at.
func (j *Judge) producerHolder(l *scan.Lock, h *scan.Holder) (judged, bool) {
	if f := producerRules[l.Producer].holder; f != nil {
		return f(j, h)
	}
	return judged{}, false
}

// producerAfter applies a producer's rule to the verdict on its pid.
func (j *Judge) producerAfter(l *scan.Lock, h *scan.Holder, jd judged) judged {
	if f := producerRules[l.Producer].after; f != nil {
		return f(j, h, jd)
	}
	return jd
}

// producerGone applies a producer's rule to a lock whose holder is gone.
func (j *Judge) producerGone(r Result) Result {
	if f := producerRules[r.Lock.Producer].gone; f != nil {
		return f(j, r)
	}
	return r
}

// producerNoRecord applies a producer's rule to a lock with no record.
func (j *Judge) producerNoRecord(r Result) (Result, bool) {
	if f := producerRules[r.Lock.Producer].noRecord; f != nil {
		return f(r)
	}
	return r, false
}

// gitRule judges a git lock file under a git directory by git's rule.
func (j *Judge) gitRule(r Result) (Result, bool) {
	if r.Lock.Kind != scan.KindFile || r.Lock.Repo == nil {
		return r, false
	}
	return j.gitLock(r), true
}

// gitLock judges a git lock file (<path>.lock under a git directory). git
// writes the new content into it and keeps no record of its holder, and
// while a commit sits in its editor it keeps no descriptor of it open
// either: the holder is a running git process that works in this
// repository, by the device and inode of its common git directory.
// git's own advice, once no git process runs there, is to remove the file.
func (j *Judge) gitLock(r Result) Result {
	l := r.Lock
	what := fmt.Sprintf("a git lock of the repository %s", quoteName(l.Repo.Path))
	w, ok := j.Evidence.(RepoWitness)
	if !ok {
		r = r.set(judged{v: Ownerless, reason: what + ", and no one asked which git processes run"})
		r.ownerlessRemedy()
		return r
	}
	hs, complete := w.GitWorkers(l.Repo.Dev, l.Repo.Ino)
	if len(hs) > 0 {
		h := hs[0]
		r = r.set(judged{v: Live, reason: fmt.Sprintf("%s: git process pid %d (%s) works in it", what, h.Pid, h.Comm)})
		r.Kernel = hs
		for _, o := range hs[1:] {
			r.Notes = append(r.Notes, fmt.Sprintf("also pid %d (%s) works in it", o.Pid, o.Comm))
		}
		return r
	}
	if !complete {
		return r.set(judged{v: Unknown, reason: what + ", and not every git process's working directory could be seen, so one may be working in it (run lockctl as root, from the host)"})
	}
	r = r.set(judged{v: Ownerless, reason: what + ", and no git process works in it (git records no holder: its own advice is then to remove the file)"})
	r.ownerlessRemedy()
	return r
}

// postgresShm keeps a PostgreSQL data directory's lock whose postmaster is
// gone while any process is still attached to the cluster's shared memory
// (line 7 of postmaster.pid): orphan backends of a SIGKILLed postmaster
// still run, and PostgreSQL itself refuses to start over them
// (miscinit.c, CreateLockFile, PGSharedMemoryIsInUse). A segment that
// cannot be examined counts as attached.
func (j *Judge) postgresShm(r Result) Result {
	pg := r.Lock.Postgres
	if pg == nil || !pg.HasShm {
		return r // the socket lock, or a file not yet written whole: the pid decides, as for PostgreSQL
	}
	w, ok := j.Evidence.(ShmWitness)
	seg := fmt.Sprintf("its shared memory segment (key %d, id %d)", pg.ShmKey, pg.ShmID)
	if !ok {
		return r.set(judged{v: Unknown, holder: r.Holder, started: r.Started, reason: fmt.Sprintf("%s, but whether %s is still attached was not asked", r.Reason, seg)})
	}
	switch inUse, known := w.ShmInUse(pg.ShmKey, pg.ShmID, r.Lock.Dir); {
	case !known:
		r = r.set(judged{v: Unknown, holder: r.Holder, started: r.Started, reason: fmt.Sprintf("%s, but %s cannot be examined from here (another IPC namespace, or no permission): backends of the cluster may still run", r.Reason, seg)})
	case inUse:
		r = r.set(judged{v: Live, holder: r.Holder, started: r.Started, reason: fmt.Sprintf("%s, but processes are still attached to %s: backends of the cluster still run (PostgreSQL refuses to start over them)", r.Reason, seg)})
	default:
		r.Reason = fmt.Sprintf("%s, and no process is attached to %s", r.Reason, seg)
		return r
	}
	r.Remove = nil
	return r
}

// mercurialNamespace: Mercurial takes a lock recorded in another pid
// namespace for held (mercurial/lock.py compares the whole
// "<host>/<namespace>" prefix), whether or not that namespace has ended.
func mercurialNamespace(j *Judge, h *scan.Holder) (judged, bool) {
	if h.PidNS != "" && h.PidNS != j.Host.PidNS && strings.EqualFold(h.Host, j.Host.Name) {
		return judged{v: Foreign, holder: h, reason: fmt.Sprintf("Mercurial recorded pid %s in pid namespace %s, not this one (%s): hg itself takes such a lock as held; judge it inside that container", h.PidText, h.PidNS, j.Host.PidNS)}, true
	}
	return judged{}, false
}

// emacsBoot: Emacs records its own idea of the boot time, and takes a
// running pid whose boot time differs by more than a second for another
// boot's (src/filelock.c, current_lock_owner). Emacs's boot time and the
// kernel's btime come from different sources, so lockctl lets a mismatch
// make a running pid recycled, never gone.
func emacsBoot(j *Judge, h *scan.Holder, jd judged) judged {
	if jd.v != Live || h.Booted.IsZero() || j.Host.BootTime.IsZero() {
		return jd
	}
	if d := h.Booted.Sub(j.Host.BootTime); d > time.Second || d < -time.Second {
		jd.v = Recycled
		jd.reason = fmt.Sprintf("pid %s is running, but Emacs recorded a boot at %s and this machine booted at %s: the pid belongs to another process (Emacs would take the lock)", h.PidText, stamp(h.Booted), stamp(j.Host.BootTime))
	}
	return jd
}

// gnupgNode: gpg takes a dotlock for its own node's only when the node
// name in it is byte for byte its own uname(2) node name (common/dotlock.c,
// read_lockfile: memcmp, then the newline); of any other, however alike,
// it never removes it, and waits. lockctl, which compares host names
// without regard to case, is held to that: a name that differs only in
// case is foreign.
func gnupgNode(j *Judge, h *scan.Holder) (judged, bool) {
	if h.Host != j.Host.Name && strings.EqualFold(h.Host, j.Host.Name) {
		return judged{v: Foreign, holder: h, reason: fmt.Sprintf("GnuPG recorded node %s, and this is %s: gpg compares node names byte for byte and takes such a lock as another node's, held", h.Host, j.Host.Name)}, true
	}
	return judged{}, false
}

// libreOfficeRule judges a LibreOffice document lock, which records no
// pid: another host's (LOCALHOST compared byte for byte, as sfx2's
// docfile.cxx does) is foreign; this host's is owner-less, with no
// remedy: LibreOffice itself takes it over silently only when run by the
// same system user with the same profile ("this is own lock from the same
// installation, it could remain because of crash"), which only one
// LibreOffice at a time runs, and asks the user otherwise.
func (j *Judge) libreOfficeRule(r Result) (Result, bool) {
	lo := r.Lock.LibreOffice
	if r.Lock.Kind != scan.KindFile || lo == nil || len(r.Lock.Holders) != 1 || r.Lock.Holders[0].Holder == nil {
		return r, false
	}
	h := r.Lock.Holders[0].Holder
	if j.Host.Name == "" || h.Host != j.Host.Name {
		return r.set(judged{v: Foreign, holder: h, reason: fmt.Sprintf("LibreOffice recorded user %s on host %s, and this is %s: LibreOffice there may have the document open (it records no pid)", h.User, h.Host, cmp.Or(j.Host.Name, "a host whose name cannot be read"))}), true
	}
	r = r.set(judged{v: Ownerless, holder: h, reason: fmt.Sprintf("LibreOffice recorded user %s on this host, with the profile %s, at %s, and no pid: whether a LibreOffice still has the document open cannot be told from the lock", h.User, lo.Profile, lo.Time)})
	r.Notes = append(r.Notes, fmt.Sprintf("LibreOffice run by %s with that profile takes this lock over by itself (a lock left by a crash); anyone else is asked", h.User))
	r.Notes = append(r.Notes, scan.LibreOfficeInPlace)
	return r, true
}

// terraformRule judges a Terraform lock info file by the lock it
// describes: Terraform's local backend holds an fcntl write lock on the
// whole state file (statemgr/filesystem_lock_unix.go), and the info file
// only says who took it. Held while the kernel lists a lock on the state
// file; free when the whole lock table lists none, or there is no state
// file to hold one on (a later Terraform takes the lock and overwrites the
// info); unknown when the table may not show it. Never removed.
func (j *Judge) terraformRule(r Result) (Result, bool) {
	tf := r.Lock.Terraform
	if r.Lock.Kind != scan.KindFile || tf == nil {
		return r, false
	}
	var h *scan.Holder
	if len(r.Lock.Holders) == 1 {
		h = r.Lock.Holders[0].Holder
	}
	what := fmt.Sprintf("Terraform's lock info for the state file %s (taken by %s for %s)", quoteName(tf.State), cmp.Or(tf.Who, "someone"), cmp.Or(tf.Operation, "an operation"))
	switch {
	case errors.Is(tf.StateErr, fs.ErrNotExist):
		return r.set(judged{v: Free, holder: h, reason: what + ": there is no state file, so no lock on it is held; the next Terraform takes the lock and writes the info again"}), true
	case tf.StateErr != nil:
		return r.set(judged{v: Unknown, holder: h, reason: fmt.Sprintf("%s: the state file cannot be looked at (%v)", what, tf.StateErr)}), true
	}
	if _, ok := j.Evidence.(LockTable); !ok {
		return r.set(judged{v: Unknown, holder: h, reason: what + ": Terraform holds it by an fcntl lock on the state file, and the kernel's lock table was not read"}), true
	}
	a := j.advisoryOn(r.Lock.Dir, tf.State, tf.StateInfo)
	switch {
	case len(a.holders) > 0:
		r = r.set(judged{v: Live, holder: h, reason: what + ": the state file is locked: " + a.text})
		r.Kernel = a.holders
		return r, true
	case !a.none:
		return r.set(judged{v: Unknown, holder: h, reason: what + ": no lock on the state file is listed, but " + a.doubt}), true
	}
	return r.set(judged{v: Free, holder: h, reason: what + ": no process holds a lock on the state file, so it is free (Terraform that was killed leaves the info; the next one overwrites it)"}), true
}

// CcacheStaleness is how long ccache takes a lock for held after its last
// activity, whatever its holder: k_staleness_limit in util/lockfile.cpp.
const CcacheStaleness = 2 * time.Second

// ccacheQuiet: ccache breaks a lock only once it has been inactive for
// CcacheStaleness (util/lockfile.cpp, do_acquire); until then it waits on
// it, even when its pid is gone. lockctl is never more eager: a gone
// holder's lock taken (by the time its target records, or the link's
// mtime) less than that long ago is unknown for that while, never gone.
func ccacheQuiet(_ *Judge, r Result) Result {
	last := r.Lock.Info.Mtime
	if h := r.Holder; h != nil && h.Since.After(last) {
		last = h.Since
	}
	if age := time.Since(last); age < CcacheStaleness {
		r = r.set(judged{v: Unknown, holder: r.Holder, started: r.Started, reason: fmt.Sprintf("%s, but the lock was taken %s ago, and ccache waits %s after a lock's last activity before it breaks it", r.Reason, ageText(age), CcacheStaleness)})
		r.Remove = nil
	}
	return r
}

// vimUnsaved: a gone vim's swap that holds unsaved changes is the one copy
// of someone's work: never removed.
func vimUnsaved(_ *Judge, r Result) Result {
	if v := r.Lock.Vim; v != nil && v.Dirty {
		r.Remove = nil
		r.Notes = append(r.Notes, fmt.Sprintf("it holds changes to %s that were never saved: recover them with 'vim -r %s', then delete the swap file; lockctl never removes it", quoteName(v.File), v.File))
	}
	return r
}

// ProperLockfileFresh is how recently an npm proper-lockfile lock must have
// been refreshed to count as held: proper-lockfile's own default stale
// interval, after which it takes the lock for abandoned (its holder
// refreshes the mtime every stale/2, 5 s by default; lib/lockfile.js,
// lock and isLockStale).
const ProperLockfileFresh = 10 * time.Second

// ProperLockfileAhead is how far ahead of this clock a proper-lockfile
// mtime may be and still read as just refreshed: it rounds the time it
// sets up to the next second on file systems that keep only seconds
// (lib/mtime-precision.js).
const ProperLockfileAhead = 2 * time.Second

// properLockfile judges npm's proper-lockfile lock, an empty <file>.lock
// directory that names no holder. Its holder proves itself alive by
// refreshing the directory's mtime: a recent mtime (or one ahead of this
// clock, which proper-lockfile rounds up to the second on coarse file
// systems) is evidence that it lives. An mtime left alone longer stays
// owner-less, never gone: the stale interval is the holder's option and is
// not stored in the lock, and a holder that is suspended stops refreshing.
func properLockfile(r Result) Result {
	age := time.Since(r.Lock.Info.Mtime)
	what := "an npm proper-lockfile lock (an empty directory beside the file it locks, no holder recorded)"
	if age < -ProperLockfileAhead {
		// Not a rounding: a clock that moved, or a hand-set mtime. It says
		// nothing of when the holder last refreshed it.
		r = r.set(judged{v: Ownerless, reason: fmt.Sprintf("%s, its mtime %s ahead of this clock, so when it was last refreshed cannot be told", what, ageText(-age))})
		r.ownerlessRemedy()
		return r
	}
	if age < ProperLockfileFresh {
		return r.set(judged{v: Live, reason: fmt.Sprintf("%s, refreshed %s ago: its holder refreshes it every few seconds while it runs (proper-lockfile takes it for stale only after %s)", what, ageText(age), ProperLockfileFresh)})
	}
	r = r.set(judged{v: Ownerless, reason: fmt.Sprintf("%s, last refreshed %s ago: a running holder refreshes it every 5 s by default, but the interval is the holder's choice and is not recorded, and a suspended holder stops refreshing", what, ageText(age))})
	r.ownerlessRemedy()
	return r
}

// properLockfileRule judges an empty lock directory by proper-lockfile's
// rule; any other (a record claimed away) is left to the records.
func properLockfileRule(r Result) (Result, bool) {
	if r.Lock.Kind != scan.KindDir || r.Lock.Format != scan.FormatEmpty {
		return r, false
	}
	return properLockfile(r), true
}

// ageText is a short, rounded age: "0s" for a time ahead of this clock.
func ageText(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return d.Round(time.Minute).String()
}

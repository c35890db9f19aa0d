package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Reservations: a lock taken for a worker that does not exist yet (the
// last part of shared/seeds/000). A dispatcher reserves the lock before it
// sends the work, so that two dispatches cannot both count one free slot;
// the worker adopts it when it starts; the reservation ends by itself once
// its grace has passed with no adoption. docs/record-format.md, "Reservations".

// Reservation is a reserved lock: held, whoever reserved it, until Until.
type Reservation struct {
	// Path is the lock's absolute path.
	Path string
	// Token names the reservation: the worker adopts it with it, and the
	// dispatcher releases it with it.
	Token string
	// Until is when the reservation ends unless adopted (wall time, as an
	// estimate; the record holds it on the kernel's monotonic clock).
	Until time.Time
}

// MaxGrace is the longest grace a reservation takes: a year. A worker is
// started in seconds or minutes, and a deadline far beyond that overflowed
// the record's clock, leaving a lock nothing could take or release.
const MaxGrace = 365 * 24 * time.Hour

// Reserve takes the lock at path for a worker not yet started, for grace,
// waiting for it as Acquire does until ctx is done. opts.Pid is the
// reserver (0: this process), recorded but not needed alive: the lock stays
// held after it exits, until Adopt, ReleaseReservation or the end of the
// grace. The deadline is on this boot's CLOCK_MONOTONIC, so a wall-clock
// step cannot shorten it and a reboot ends it.
func Reserve(ctx context.Context, path string, grace time.Duration, opts Options) (*Reservation, error) {
	if grace <= 0 || grace > MaxGrace {
		return nil, fmt.Errorf("cannot reserve %s: the grace must be more than 0 and at most %s, not %s", path, MaxGrace, grace)
	}
	if opts.Start != nil || len(opts.Also) > 0 {
		return nil, fmt.Errorf("cannot reserve %s: a reservation names its reserver only", path)
	}
	l, err := acquire(ctx, path, opts, grace)
	if err != nil {
		return nil, err
	}
	return &Reservation{Path: l.Path, Token: l.Holder.Token, Until: l.Holder.Since.Add(grace)}, nil
}

// reserveFor makes h, a fresh record, a reservation until grace from now.
func reserveFor(host verdict.Host, h *scan.Holder, grace time.Duration) error {
	switch {
	case host.Clock == nil:
		return errors.New("this platform's monotonic clock cannot be read, and a reservation's deadline is on it")
	case host.ClockErr != nil:
		return fmt.Errorf("this time namespace's clock offset cannot be read, and a reservation's deadline is corrected by it: %w", host.ClockErr)
	}
	now, err := host.Clock()
	if err != nil {
		return err
	}
	h.Reserved, h.Until, h.TimeNS = true, now-host.ClockOffset+grace, host.ClockOffset
	h.Also = nil
	return nil
}

// NotReservedError says the lock is not the reservation the token names:
// another reservation, a lock held by a process, or none.
type NotReservedError struct {
	Path, Token, Why string
}

func (e *NotReservedError) Error() string {
	return fmt.Sprintf("%s is not reserved by token %s: %s", e.Path, e.Token, e.Why)
}

// ReservationEndedError says the reservation's grace passed before it was
// adopted: the lock is gone, and anyone may break it.
type ReservationEndedError struct {
	Path, Reason string
}

func (e *ReservationEndedError) Error() string {
	return fmt.Sprintf("cannot adopt %s: %s", e.Path, e.Reason)
}

// reserved reads the lock at path and returns it when it is the
// reservation token names, with its record, judged.
func reserved(k Kernel, abs, dir, name, token string) (*scan.Lock, scan.Record, verdict.Result, error) {
	cur, err := scan.ReadOne(dir, name)
	if err != nil {
		return nil, scan.Record{}, verdict.Result{}, err
	}
	no := func(why string) (*scan.Lock, scan.Record, verdict.Result, error) {
		return nil, scan.Record{}, verdict.Result{}, &NotReservedError{Path: abs, Token: token, Why: why}
	}
	switch {
	case cur == nil || cur.Kind == scan.KindMissing:
		return no("there is no lock there (released, adopted and released, or broken once its grace passed)")
	case cur.Format != scan.FormatLockctl || len(cur.Holders) != 1 || cur.Holders[0].Holder == nil:
		return no("it holds no usable lockctl record ('lockctl doctor " + abs + "' says what it is)")
	}
	rec := cur.Holders[0]
	h := rec.Holder
	switch {
	case !h.Reserved && h.Token == token:
		return no("it was adopted already")
	case !h.Reserved:
		return no(fmt.Sprintf("it is held by pid %d, not reserved", h.Pid))
	case h.Token != token:
		return no("it is another reservation")
	}
	return cur, rec, k.ReserveJudge(k.Host()).Judge(cur), nil
}

// Adopt makes opts.Pid (0: this process) the holder of the lock reserved
// by token, with no moment at which the lock is free: the worker's record
// is built beside the lock, the reservation is claimed out of the lock
// directory (which stays, so nothing else can take it, and the claim marks
// it as under way), checked to be the bytes judged and still within its
// grace, and the worker's record is moved in. A reservation that ended, or
// that someone else released or broke first, is not adopted: a breaker and
// an adopter both start by claiming the one record, and only one of them
// can. The returned Lock is the worker's, released like any.
func Adopt(path, token string, opts Options) (*Lock, error) {
	d, abs, name, err := openLockDir(path)
	if err != nil {
		var bad *BadPathError
		if errors.As(err, &bad) {
			return nil, err
		}
		return nil, fmt.Errorf("cannot adopt %s: %w", abs, err)
	}
	defer d.Close()
	k := kernelOr(opts.Kernel)
	cur, rec, res, err := reserved(k, abs, d.Path(), name, token)
	if err != nil {
		return nil, err
	}
	if err := adoptable(abs, res); err != nil {
		return nil, err
	}
	h, err := holder(k, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot adopt %s: %w", abs, err)
	}
	l := &Lock{Path: abs, Holder: h, dir: d.Path(), name: name, record: encode(h), hook: opts.Hook, kern: k, host: k.Host(), dirInfo: cur.Info}
	in, err := d.OpenDir(name)
	if err != nil {
		return nil, fmt.Errorf("cannot adopt %s: %w", abs, err)
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil || !cur.Info.Same(st) {
		return nil, &NotReservedError{Path: abs, Token: token, Why: "the lock directory was replaced since it was read"}
	}

	// 1. The worker's record, complete and durable, beside the lock.
	tmp, err := l.buildWorker(d)
	if err != nil {
		return nil, err
	}
	defer removeBuilt(d, tmp) // empty once the record has moved in
	// 2. Claim the reservation, as a release does: the directory stays,
	// empty, with the claim beside it naming this process.
	claim := fmt.Sprintf("%s.rel.%s.%d", name, token, selfPid)
	if err := in.MoveNoReplace("holder", d, claim); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &NotReservedError{Path: abs, Token: token, Why: "its record was claimed first (released, or broken once its grace passed)"}
		}
		return nil, fmt.Errorf("cannot adopt %s: %w", abs, err)
	}
	l.at(AdoptClaimed)
	back := func(why error) error {
		if err := d.MoveNoReplace(claim, in, "holder"); err != nil {
			return fmt.Errorf("cannot adopt %s: %v, and the reservation could not be put back (%v): it is kept in %s", abs, why, err, d.Join(claim))
		}
		return why
	}
	// 3. The claimed record must be the one judged, and its grace must not
	// have passed meanwhile: claimed, it can no longer be broken, so this
	// look is the last word.
	data, st, _, err := d.ReadFile(claim, scan.MaxRecord)
	if err != nil || !st.SameFile(rec.Info) || string(data) != string(rec.Raw) {
		return nil, back(&NotReservedError{Path: abs, Token: token, Why: "its record changed between the look and the claim"})
	}
	judge := k.ReserveJudge(k.Host())
	if v, reason := judge.Reservation(rec.Holder); v != verdict.Live {
		return nil, back(&ReservationEndedError{Path: abs, Reason: reason})
	}
	// 4. The worker's record goes in. Nothing else can have: the lock
	// directory was never free.
	if err := l.moveIn(d, tmp, in); err != nil {
		return nil, back(err)
	}
	l.at(AdoptMoved)
	if err := d.Remove(claim); err != nil {
		return l, fmt.Errorf("adopted %s, but the reservation's claim %s could not be removed: %w", abs, d.Join(claim), err)
	}
	if opts.Pid == 0 || opts.Pid == selfPid {
		l.flockAdopted(d)
	}
	return l, nil
}

// buildWorker builds the worker's record, complete and durable, beside
// the lock, and returns the build's name; on failure it leaves nothing.
func (l *Lock) buildWorker(d fsx.Dir) (string, error) {
	tmp, err := l.makeBuild(d, l.Holder.Token)
	if err != nil {
		return "", err
	}
	if err := l.build(d, tmp); err != nil {
		removeBuilt(d, tmp)
		return "", fmt.Errorf("cannot adopt %s: %w", l.Path, err)
	}
	return tmp, nil
}

// adoptable says why a reservation judged res cannot be adopted, or nil.
func adoptable(abs string, res verdict.Result) error {
	if res.Verdict != verdict.Live {
		if res.Verdict == verdict.Gone {
			return &ReservationEndedError{Path: abs, Reason: res.Reason}
		}
		return fmt.Errorf("cannot adopt %s: %s: %s", abs, res.Verdict, res.Reason)
	}
	return nil
}

// moveIn moves the worker's record from its build tmp into the lock
// directory in, never replacing anything.
func (l *Lock) moveIn(d fsx.Dir, tmp string, in fsx.Dir) error {
	t, err := d.OpenDir(tmp)
	if err != nil {
		return fmt.Errorf("cannot adopt %s: %w", l.Path, err)
	}
	defer t.Close()
	if err := t.MoveNoReplace("holder", in, "holder"); err != nil {
		return fmt.Errorf("cannot adopt %s: %w", l.Path, err)
	}
	return nil
}

// flockAdopted takes the kernel lock on the adopted lock directory for
// this process, the worker, where it can: it adds evidence and replaces
// nothing (flockBuilt says why), so a failure leaves the lock without it.
func (l *Lock) flockAdopted(d fsx.Dir) {
	if f, err := d.OpenDirFile(l.name); err == nil {
		if tryFlock(f) == nil {
			l.kernel = f
		} else {
			f.Close()
		}
	}
}

// ReleaseReservation gives up the reservation token names, unadopted (the
// dispatch provably failed): claimed, checked and removed as any release.
// A reservation whose grace has passed may be released too.
//
// k is the wired kernel (judges.Kernel); nil fails closed.
func ReleaseReservation(path, token string, k Kernel) error {
	abs, dir, name, err := split(path)
	if err != nil {
		return err
	}
	cur, rec, _, err := reserved(kernelOr(k), abs, dir, name, token)
	if err != nil {
		return err
	}
	l := &Lock{Path: abs, Holder: *rec.Holder, dir: dir, name: name, record: rec.Raw, recInfo: rec.Info, dirInfo: cur.Info}
	return l.Release()
}

//go:build linux

package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endProcess(c) })
	return c
}

// untilEnded waits on the monotonic clock, which the reservation's deadline
// is on, until the reservation at p reads gone.
func untilEnded(t *testing.T, p string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, "the reservation's grace to pass", func() bool { return judge(t, p).Verdict == verdict.Gone })
}

// A reservation stays held after its reserver is gone, and ends by itself
// once its grace has passed: then it breaks like any gone lock.
func TestReservationOutlivesReserver(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	reserver := sleeper(t)
	const grace = 400 * time.Millisecond
	mono := func() time.Duration { d, _ := kernel.Monotonic(); return d }
	end := mono() + grace // the deadline is at least this
	r, err := Reserve(context.Background(), p, grace, Options{Kernel: kern, Pid: reserver.Process.Pid, Command: "dispatch"})
	if err != nil {
		t.Fatal(err)
	}
	killAndReap(t, reserver)
	res := judge(t, p)
	if res.Verdict != verdict.Live || !strings.Contains(res.Reason, "reserved for a worker") {
		t.Fatalf("a reservation whose reserver is gone: %s (%s), want live, reserved", res.Verdict, res.Reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = Acquire(ctx, p, Options{Kernel: kern})
	var held *HeldError
	if !errors.As(err, &held) || !held.Holder.Reserved || !strings.Contains(err.Error(), "reserved for a worker") {
		t.Fatalf("Acquire on a reservation: %v, want a HeldError naming the reservation", err)
	}
	untilEnded(t, p)
	if now := mono(); now < end {
		t.Fatalf("the reservation read gone %s before its deadline", end-now)
	}
	l, err := Acquire(context.Background(), p, Options{Kernel: kern})
	if err != nil {
		t.Fatalf("Acquire once the grace had passed: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if r.Token == "" {
		t.Error("Reserve returned no token")
	}
}

// Adopt makes the worker the fenced holder: the lock is its, reads gone
// once it exits, and was never free on the way.
func TestAdoptMakesWorkerHolder(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	r, err := Reserve(context.Background(), p, time.Minute, Options{Kernel: kern})
	if err != nil {
		t.Fatal(err)
	}
	worker := sleeper(t)
	// At every step of the adoption the lock is held: judged live or
	// claimed (an adoption under way), never gone or missing.
	var seen []string
	hook := func(pt Point) {
		res := judge(t, p)
		seen = append(seen, string(pt)+":"+string(res.Verdict))
		if res.Verdict != verdict.Live && res.Verdict != verdict.Claimed {
			t.Errorf("at %s the lock reads %s (%s): it must never be free", pt, res.Verdict, res.Reason)
		}
	}
	l, err := Adopt(p, r.Token, Options{Kernel: kern, Pid: worker.Process.Pid, Command: "worker", Hook: hook})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Errorf("hook points seen: %v, want adopt-claimed and adopt-moved", seen)
	}
	res := judge(t, p)
	if res.Verdict != verdict.Live || res.Holder == nil || res.Holder.Pid != int64(worker.Process.Pid) || res.Holder.Reserved {
		t.Fatalf("after Adopt: %s (%s), want live, held by the worker", res.Verdict, res.Reason)
	}
	testutil.WantNames(t, dir, "x.lock")
	// The token is spent: adopting or releasing the reservation again is
	// refused, and the worker's lock is untouched.
	var not *NotReservedError
	if _, err := Adopt(p, r.Token, Options{Kernel: kern}); !errors.As(err, &not) {
		t.Errorf("a second Adopt: %v, want NotReservedError", err)
	}
	if err := ReleaseReservation(p, r.Token, kern); !errors.As(err, &not) {
		t.Errorf("ReleaseReservation after adoption: %v, want NotReservedError", err)
	}
	killAndReap(t, worker)
	if res := judge(t, p); res.Verdict != verdict.Gone {
		t.Fatalf("after the worker exited: %s (%s), want gone", res.Verdict, res.Reason)
	}
	_ = l
}

// An adopter that claimed the reservation after its grace ended puts it
// back and does not adopt it: the deadline is checked on the claimed
// record, which no breaker can take meanwhile, so an adoption and an expiry
// cannot both win.
func TestAdoptAfterGraceRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	r, err := Reserve(context.Background(), p, 300*time.Millisecond, Options{Kernel: kern})
	if err != nil {
		t.Fatal(err)
	}
	before := readFile(t, filepath.Join(p, "holder"))
	j := &verdict.Judge{Host: localHost(), Probe: kernel.KernelProbe{}}
	h, err := scan.ParseLockctl(before)
	if err != nil {
		t.Fatal(err)
	}
	hook := func(pt Point) {
		if pt == AdoptClaimed {
			testutil.WaitFor(t, 30*time.Second, "the grace to pass", func() bool { v, _ := j.Reservation(h); return v == verdict.Gone })
		}
	}
	_, err = Adopt(p, r.Token, Options{Kernel: kern, Hook: hook})
	var ended *ReservationEndedError
	if !errors.As(err, &ended) {
		t.Fatalf("Adopt whose grace passed while it held the claim: %v, want ReservationEndedError", err)
	}
	if got := readFile(t, filepath.Join(p, "holder")); string(got) != string(before) {
		t.Errorf("the reservation was not put back as it was:\n%s", got)
	}
	testutil.WantNames(t, dir, "x.lock")
	if res := judge(t, p); res.Verdict != verdict.Gone {
		t.Errorf("the ended reservation reads %s (%s), want gone", res.Verdict, res.Reason)
	}
}

// ReleaseReservation gives up only the reservation its token names.
func TestReleaseReservation(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	r, err := Reserve(context.Background(), p, time.Minute, Options{Kernel: kern})
	if err != nil {
		t.Fatal(err)
	}
	var not *NotReservedError
	other := strings.Replace(r.Token, r.Token[len(r.Token)-5:len(r.Token)-2], "000", 1)
	if err := ReleaseReservation(p, other, kern); !errors.As(err, &not) {
		t.Fatalf("ReleaseReservation with another token: %v, want NotReservedError", err)
	}
	if res := judge(t, p); res.Verdict != verdict.Live {
		t.Fatalf("after a refused release: %s (%s), want live", res.Verdict, res.Reason)
	}
	if err := ReleaseReservation(p, r.Token, kern); err != nil {
		t.Fatal(err)
	}
	testutil.WantNames(t, dir)
	// A held lock is not a reservation, whatever token is given.
	l, err := Acquire(context.Background(), p, Options{Kernel: kern})
	if err != nil {
		t.Fatal(err)
	}
	if err := ReleaseReservation(p, l.Holder.Token, kern); !errors.As(err, &not) {
		t.Fatalf("ReleaseReservation of a held lock: %v, want NotReservedError", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// A reboot ends a reservation, however long its grace: a record of another
// boot is gone, and the next Acquire breaks it.
func TestReservationEndsWithBoot(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	_, rec := holderFor(t, os.Getpid(), func(h *scan.Holder) {
		setPid(h, 4242)
		h.BootID = "0b5e7c3a-2f1d-4e6b-8a9c-1d2e3f4a5b6c"
		h.Reserved, h.Until = true, 1<<62
	})
	writeLockDir(t, p, rec)
	if res := judge(t, p); res.Verdict != verdict.Gone || !strings.Contains(res.Reason, "boot") {
		t.Fatalf("a reservation of another boot: %s (%s), want gone", res.Verdict, res.Reason)
	}
	l, err := Acquire(context.Background(), p, Options{Kernel: kern})
	if err != nil {
		t.Fatalf("Acquire over a reservation of another boot: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// A wait on a reservation says so once, not on every try: the time left,
// which changes each time, is not part of the note.
func TestWaitOnReservationSaidOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	if _, err := Reserve(context.Background(), p, time.Minute, Options{Kernel: kern}); err != nil {
		t.Fatal(err)
	}
	var notes []string
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := Acquire(ctx, p, Options{Kernel: kern, Waiting: func(who string) { notes = append(notes, who) }})
	if err == nil {
		t.Fatal("Acquire took a reserved lock")
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "reserved for a worker until ") {
		t.Errorf("the wait said %q, want one note of the reservation", notes)
	}
}

// TestReserveGraceBounded: a grace beyond MaxGrace is refused and nothing
// is made; its deadline overflowed the record's clock (2562047h wrote a
// negative reserved-until), and the lock could then be neither adopted,
// released nor broken.
func TestReserveGraceBounded(t *testing.T) {
	dir := t.TempDir()
	for i, grace := range []time.Duration{MaxGrace + time.Second, 2562047 * time.Hour} {
		// A lock of its own for each, and a deadline: a Reserve that took
		// the first would otherwise wait for ever on the second.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := Reserve(ctx, filepath.Join(dir, fmt.Sprintf("g%d.lock", i)), grace, Options{Kernel: kern})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "at most") {
			t.Errorf("Reserve(grace %s) = %v, want a refusal", grace, err)
		}
	}
	testutil.WantNames(t, dir)
	r, err := Reserve(context.Background(), filepath.Join(dir, "g.lock"), MaxGrace, Options{Kernel: kern})
	if err != nil {
		t.Fatalf("Reserve(grace %s): %v", MaxGrace, err)
	}
	if !r.Until.After(time.Now().Add(MaxGrace - time.Hour)) {
		t.Errorf("Until = %s, want about a year from now", r.Until)
	}
}

package verdict

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// A reservation is judged by its deadline on the kernel's monotonic clock,
// never by its reserver's pid: held until then though the reserver is gone,
// gone after, and held (unknown) whenever this reader cannot tell the time
// on the writer's clock.
func TestReservation(t *testing.T) {
	const now = 5000 * time.Second // this reader's CLOCK_MONOTONIC
	reservation := func(until, timens time.Duration, edit ...func(*scan.Holder)) *scan.Lock {
		h := &scan.Holder{Pid: 4242, PidText: "4242", Start: 99, HasStart: true, BootID: hereBoot, PidNS: hereNS, Host: here,
			Command: "dispatch", Token: "4242." + strings.Repeat("ab", 16) + ".1", Since: written, Reserved: true, Until: until, TimeNS: timens}
		for _, e := range edit {
			e(h)
		}
		return dirLock(scan.FormatLockctl, scan.Record{File: lockName + "/holder", Info: fileAt(written), Holder: h})
	}
	clock := func() (time.Duration, error) { return now, nil }
	tests := []struct {
		name   string
		lock   *scan.Lock
		host   func(*Host)
		want   Verdict
		reason string
	}{
		{"within its grace, the reserver gone", reservation(now+3*time.Second, 0), nil, Live, "reserved for a worker until"},
		{"its grace has passed", reservation(now-time.Second, 0), nil, Gone, "with no worker adopting it"},
		{"at its deadline", reservation(now, 0), nil, Gone, "ended"},
		{"in this reader's time namespace, within its grace", reservation(now-100*time.Second+time.Second, 100*time.Second), func(h *Host) { h.ClockOffset = 100 * time.Second }, Live, "reserved for a worker"},
		{"in this reader's time namespace, past it", reservation(now-100*time.Second-time.Second, 100*time.Second), func(h *Host) { h.ClockOffset = 100 * time.Second }, Gone, "ended"},
		{"written in another time namespace", reservation(now-time.Hour, 7*time.Second), nil, Unknown, "offset by 7s"},
		{"this reader's offset unreadable", reservation(now-time.Hour, 0), func(h *Host) { h.ClockErr = errors.New("permission denied") }, Unknown, "cannot be read"},
		{"no clock here", reservation(now-time.Hour, 0), func(h *Host) { h.Clock = nil }, Unknown, "cannot read"},
		{"the clock fails", reservation(now-time.Hour, 0), func(h *Host) {
			h.Clock = func() (time.Duration, error) { return 0, errors.New("EINVAL") }
		}, Unknown, "cannot be read"},
		{"another boot", reservation(now+time.Hour, 0, func(h *scan.Holder) { h.BootID = "0b5e7c3a-2f1d-4e6b-8a9c-1d2e3f4a5b6c" }), nil, Gone, "ended with that boot"},
		{"another host", reservation(now+time.Hour, 0, func(h *scan.Holder) {
			h.BootID, h.Host = "0b5e7c3a-2f1d-4e6b-8a9c-1d2e3f4a5b6c", "beta"
		}), nil, Foreign, "names host beta"},
		// The clock is the kernel's: a reservation made in a container is
		// judged by its deadline from the host, and not by whether the
		// container's pid namespace still exists.
		{"another pid namespace of this boot, ended", reservation(now+time.Second, 0, func(h *scan.Holder) { h.PidNS = "pid:[4026532999]" }), nil, Live, "reserved for a worker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := testHost()
			h.Clock = clock
			if tt.host != nil {
				tt.host(&h)
			}
			probe := &fakeProbe{t: t}
			j := &Judge{Host: h, Probe: probe}
			res := j.Judge(tt.lock)
			if res.Verdict != tt.want || !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("verdict %s (%s), want %s with %q", res.Verdict, res.Reason, tt.want, tt.reason)
			}
			// Of another boot, the reserver is asked about only so that a
			// live one can hold it (TestBootMismatch): its absence frees
			// nothing that the other boot had not.
			if len(probe.calls) > 0 && tt.name != "another boot" {
				t.Errorf("the reserver's pid was probed (%v): a reservation is never judged by it", probe.calls)
			}
		})
	}
}

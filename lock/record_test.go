//go:build linux

package lock

import (
	"context"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/scan"
)

// TestLockRecordRoundTrip keeps encode and scan.ParseLockctl in step: what
// lockctl writes, doctor reads back field for field.
func TestLockRecordRoundTrip(t *testing.T) {
	since := time.Date(2026, 3, 4, 5, 6, 7, 891011121, time.FixedZone("X", 3600))
	base := scan.Holder{
		Pid: 4213, Start: 987654321, BootID: "e413c8f9-0a7a-4537-9745-0f7247d36377", PidNS: "pid:[4026531836]",
		Host: "build-7.example.com", Command: "agmsg-send", Token: "4213.0123456789abcdef0123456789abcdef.1", Since: since,
	}
	tests := []struct {
		name        string
		edit        func(*scan.Holder)
		wantCommand string
	}{
		{name: "plain", wantCommand: "agmsg-send"},
		{name: "also identities", edit: func(h *scan.Holder) {
			h.Also = []scan.Identity{{Pid: 1, Start: 0}, {Pid: 4194304, Start: 18446744073709551615}}
		}, wantCommand: "agmsg-send"},
		{name: "control characters", edit: func(h *scan.Holder) {
			h.Command = "evil\ncmd\tx\x1b[31m\x7f\r"
		}, wantCommand: "evil?cmd?x?[31m??"},
		{name: "a newline cannot forge fields", edit: func(h *scan.Holder) {
			h.Command = "x\npid 1\nstart 2\nalso 1 2"
		}, wantCommand: "x?pid 1?start 2?also 1 2"},
		{name: "empty command", edit: func(h *scan.Holder) { h.Command = "" }, wantCommand: "?"},
		{name: "spaces and unicode kept", edit: func(h *scan.Holder) { h.Command = " a  b ✓ " }, wantCommand: " a  b ✓ "},
		{name: "large pid and start", edit: func(h *scan.Holder) {
			h.Pid, h.Token, h.Start = 4194304, "4194304.ffffffffffffffffffffffffffffffff.7", 1<<63
		}, wantCommand: "agmsg-send"},
		{name: "reservation", edit: func(h *scan.Holder) {
			h.Reserved, h.Until, h.TimeNS = true, 1265360455287, 0
		}, wantCommand: "agmsg-send"},
		{name: "keyed", edit: func(h *scan.Holder) {
			h.Root = "/srv/repos/app with spaces"
			h.Also = []scan.Identity{{Pid: 7, Start: 8}}
		}, wantCommand: "agmsg-send"},
		{name: "keyed reservation", edit: func(h *scan.Holder) {
			h.Root, h.Reserved, h.Until = "/srv/app", true, 42
		}, wantCommand: "agmsg-send"},
		{name: "a slot of a keyed counting lock, reserved", edit: func(h *scan.Holder) {
			h.Root, h.Slots, h.Reserved, h.Until = "/srv/app", 3, true, 42
		}, wantCommand: "agmsg-send"},
		{name: "a slot", edit: func(h *scan.Holder) { h.Slots = 64 }, wantCommand: "agmsg-send"},
		{name: "reservation in a time namespace", edit: func(h *scan.Holder) {
			h.Reserved, h.Until, h.TimeNS = true, 1<<62, -86400*time.Second
		}, wantCommand: "agmsg-send"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := base
			if tt.edit != nil {
				tt.edit(&h)
			}
			rec := encode(h)
			lines := strings.Split(strings.TrimSuffix(string(rec), "\n"), "\n")
			magic, extra := scan.LockctlMagic, len(h.Also)
			if h.Reserved {
				// Its own version line, so that a reader of version 1
				// never judges it by the reserver's pid.
				magic, extra = scan.ReserveMagic, 2
			}
			if h.Root != "" {
				extra++
			}
			if h.Slots > 1 {
				extra++
			}
			if lines[0] != magic || len(lines) != 9+extra || !strings.HasSuffix(string(rec), "\n") {
				t.Fatalf("encode wrote %d lines starting %q, want %q then 8 fields and %d more lines, newline-terminated:\n%s", len(lines), lines[0], magic, extra, rec)
			}
			if len(rec) > scan.MaxRecord {
				t.Fatalf("encode wrote %d bytes, more than scan reads (%d)", len(rec), scan.MaxRecord)
			}
			got, err := scan.ParseLockctl(rec)
			if err != nil {
				t.Fatalf("ParseLockctl(encode(h)) = %v\n%s", err, rec)
			}
			want := h
			want.Command = tt.wantCommand
			want.PidText = strconv.FormatInt(h.Pid, 10)
			want.HasStart = true
			if !got.Since.Equal(want.Since) {
				t.Errorf("ParseLockctl(encode(h)).Since = %v, want %v", got.Since, want.Since)
			}
			got.Since, want.Since = time.Time{}, time.Time{}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("ParseLockctl(encode(h)) = %+v, want %+v", *got, want)
			}
		})
	}
}

// TestLockRecordWrittenByAcquireParses reads the record of a real lock back
// through scan, as doctor does.
func TestLockRecordWrittenByAcquireParses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	a, b := testutil.Sleeper(t), testutil.Sleeper(t)
	l, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: a.Process.Pid, Also: []int{b.Process.Pid}, Command: "cmd\nwith newline"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	cur, err := scan.ReadOne(dir, "x.lock")
	if err != nil || cur == nil {
		t.Fatalf("ReadOne = %v, %v", cur, err)
	}
	if cur.Format != scan.FormatLockctl || len(cur.Holders) != 1 || cur.Holders[0].Holder == nil {
		t.Fatalf("ReadOne read format %s with %d holders (%v), want one lockctl record", cur.Format, len(cur.Holders), cur.Holders)
	}
	got := cur.Holders[0].Holder
	sa, _ := startOf(a.Process.Pid)
	sb, _ := startOf(b.Process.Pid)
	host := localHost()
	switch {
	case got.Pid != int64(a.Process.Pid) || got.Start != sa:
		t.Errorf("record names pid %d start %d, want %d start %d", got.Pid, got.Start, a.Process.Pid, sa)
	case !reflect.DeepEqual(got.Also, []scan.Identity{{Pid: int64(b.Process.Pid), Start: sb}}):
		t.Errorf("record's also = %v, want pid %d start %d", got.Also, b.Process.Pid, sb)
	case got.BootID != host.BootID || got.PidNS != host.PidNS || got.Host != host.Name:
		t.Errorf("record names boot %s pidns %s host %s, want this host's %s %s %s", got.BootID, got.PidNS, got.Host, host.BootID, host.PidNS, host.Name)
	case got.Command != "cmd?with newline":
		t.Errorf("record's command = %q, want %q", got.Command, "cmd?with newline")
	case got.Token != l.Holder.Token || !strings.HasPrefix(got.Token, strconv.Itoa(a.Process.Pid)+"."):
		t.Errorf("record's token = %q, want %q, starting with the holder's pid", got.Token, l.Holder.Token)
	case time.Since(got.Since) > time.Minute || time.Since(got.Since) < 0:
		t.Errorf("record acquired at %v, want about now", got.Since)
	}
	if r := judge(t, p); r.Verdict != "live" {
		t.Errorf("judged %s (%s), want live", r.Verdict, r.Reason)
	}
}

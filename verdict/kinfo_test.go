package verdict

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/lockctl/lockctl/scan"
)

// kinfoRecords reads testdata/kinfo/records.txtar: struct kinfo_proc
// records laid out by x/sys's darwin types (see gen.go there).
func kinfoRecords(t testing.TB) map[string][]byte {
	t.Helper()
	a, err := txtar.ParseFile("testdata/kinfo/records.txtar")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range a.Files {
		var h strings.Builder
		for _, l := range strings.Split(string(f.Data), "\n") {
			if !strings.HasPrefix(l, "#") {
				h.WriteString(l)
			}
		}
		b, err := hex.DecodeString(h.String())
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		out[strings.TrimSuffix(f.Name, ".hex")] = b
	}
	return out
}

func kinfoRecord(t testing.TB, name string) []byte {
	t.Helper()
	b, ok := kinfoRecords(t)[name]
	if !ok {
		t.Fatalf("no record %q in testdata/kinfo/records.txtar", name)
	}
	return b
}

// The expected fields are written out here, not derived from the offsets
// ParseKinfo reads.
func TestParseKinfoRecords(t *testing.T) {
	want := map[string]Kinfo{
		"launchd":  {Pid: 1, Ppid: 0, Uid: 0, Stat: 2, Start: 1795681443_512334, Comm: "launchd"},
		"agent":    {Pid: 4213, Ppid: 1, Uid: 501, Stat: 3, Start: 1795690012_000007, Comm: "agmsg"},
		"zombie":   {Pid: 5120, Ppid: 4213, Uid: 501, Stat: 5, Start: 1795690100_999999, Comm: "bash"},
		"forking":  {Pid: 5121, Ppid: 4213, Uid: 501, Stat: 1, Start: 1795690101_000000, Comm: "bash"},
		"stopped":  {Pid: 612, Ppid: 1, Uid: 501, Stat: 4, Start: 1795681500_250000, Comm: "vim"},
		"longcomm": {Pid: 731, Ppid: 1, Uid: 501, Stat: 2, Start: 1795681600_000001, Comm: "com.apple.WebKit"},
	}
	recs := kinfoRecords(t)
	if len(recs) != len(want) {
		t.Errorf("records.txtar has %d records, want %d", len(recs), len(want))
	}
	for name, b := range recs {
		got, err := ParseKinfo(b)
		if err != nil {
			t.Errorf("ParseKinfo(%s): %v", name, err)
			continue
		}
		if got != want[name] {
			t.Errorf("ParseKinfo(%s) = %+v, want %+v", name, got, want[name])
		}
	}
}

func TestParseKinfoRefuses(t *testing.T) {
	good := kinfoRecord(t, "agent")
	patch := func(off int, v []byte) []byte {
		b := append([]byte(nil), good...)
		copy(b[off:], v)
		return b
	}
	u32 := func(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
	u64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	cases := map[string][]byte{
		"empty":             nil,
		"32-bit layout":     good[:492],
		"one byte short":    good[:len(good)-1],
		"one byte long":     append(append([]byte(nil), good...), 0),
		"two records":       append(append([]byte(nil), good...), good...),
		"state 0":           patch(kinfoStat, []byte{0}),
		"state 6":           patch(kinfoStat, []byte{6}),
		"state -1":          patch(kinfoStat, []byte{0xff}),
		"negative pid":      patch(kinfoPid, u32(-1)),
		"no start":          patch(kinfoStartSec, u64(0)),
		"start before 1970": patch(kinfoStartSec, u64(-5)),
		"start far off":     patch(kinfoStartSec, u64(1<<33)),
		"usec 1e6":          patch(kinfoStartUsec, u32(1e6)),
		"usec negative":     patch(kinfoStartUsec, u32(-1)),
	}
	for name, b := range cases {
		if k, err := ParseKinfo(b); err == nil {
			t.Errorf("ParseKinfo(%s) = %+v, want an error", name, k)
		}
	}
	// A command name that fills p_comm with no NUL stays within it.
	full := patch(kinfoComm, []byte(strings.Repeat("x", kinfoCommLen)))
	if k, err := ParseKinfo(full); err != nil || k.Comm != strings.Repeat("x", kinfoCommLen) {
		t.Errorf("ParseKinfo(17-byte comm) = %+v, %v", k, err)
	}
}

func FuzzParseKinfo(f *testing.F) {
	for _, b := range kinfoRecords(f) {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseKinfo(b)
		if err != nil {
			return
		}
		if len(b) != kinfoSize || k.Pid < 0 || k.Stat < sIdl || k.Stat > sZomb || len(k.Comm) > kinfoCommLen {
			t.Fatalf("ParseKinfo accepted %+v from %d bytes", k, len(b))
		}
		if s := (Host{StartBase: macStartBase, Ticks: 1e6}).Started(k.Start); s.Before(macStartBase) || s.Year() > 2300 {
			t.Fatalf("start %d converts to %s", k.Start, s)
		}
	})
}

// TestKinfoProc is every way the two answers of the macOS probe can
// combine, and the invariant: absent or zombie only when the kernel said so.
func TestKinfoProc(t *testing.T) {
	agent, zombie := kinfoRecord(t, "agent"), kinfoRecord(t, "zombie")
	const start = 1795690012_000007
	type want struct {
		state    State
		hasStart bool
		denied   bool
	}
	cases := []struct {
		name   string
		pid    int
		b      []byte
		sysErr error
		kill   error
		want   want
	}{
		{"running", 4213, agent, nil, nil, want{StateRunning, true, false}},
		{"running as another user", 4213, agent, nil, syscall.EPERM, want{StateRunning, true, true}},
		{"zombie", 5120, zombie, nil, nil, want{StateZombie, true, false}},
		{"zombie kill refuses", 5120, zombie, nil, syscall.EPERM, want{StateZombie, true, true}},
		{"exited since the sysctl", 4213, agent, nil, syscall.ESRCH, want{StateAbsent, false, false}},
		{"no process", 4213, nil, nil, syscall.ESRCH, want{StateAbsent, false, false}},
		{"no record, but kill finds one", 4213, nil, nil, nil, want{StateRunning, false, false}},
		{"no record, kill says EPERM", 4213, nil, nil, syscall.EPERM, want{StateRunning, false, true}},
		{"sysctl fails", 4213, nil, syscall.ENOMEM, syscall.ESRCH, want{StateUnknown, false, false}},
		{"record of another pid", 4214, agent, nil, nil, want{StateUnknown, false, false}},
		{"record cut short", 4213, agent[:300], nil, nil, want{StateRunning, false, false}},
		{"kill fails oddly", 4213, agent, nil, syscall.EINVAL, want{StateUnknown, false, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			p := kinfoProc(tc.pid, tc.b, tc.sysErr, func() error { asked = true; return tc.kill })
			got := want{p.State, p.HasStart, p.Denied}
			if got != tc.want {
				t.Errorf("kinfoProc = %+v (%v), want %+v", got, p.Err, tc.want)
			}
			if p.HasStart && p.Start != start && tc.name != "zombie" && tc.name != "zombie kill refuses" {
				t.Errorf("Start = %d, want %d", p.Start, start)
			}
			if (p.State == StateUnknown || (p.State == StateRunning && !p.HasStart)) && p.Err == nil {
				t.Errorf("a doubt with no reason: %+v", p)
			}
			// The invariant: gone only on the kernel's word.
			if p.State == StateAbsent && !errors.Is(tc.kill, syscall.ESRCH) {
				t.Errorf("absent, but kill said %v", tc.kill)
			}
			if p.State == StateZombie && (len(tc.b) != kinfoSize || tc.b[kinfoStat] != sZomb) {
				t.Errorf("a zombie, but the record does not say so")
			}
			if tc.sysErr != nil && asked {
				t.Errorf("kill was asked after the sysctl failed")
			}
		})
	}
}

// TestMacHost judges macOS locks with the macOS host facts and the probe's
// answers decoded from the recorded bytes.
func TestMacHost(t *testing.T) {
	const session = "8C6AD2B2-5A2F-4E5B-9D3C-0E1F2A3B4C5D"
	boot := time.Date(2026, 11, 26, 8, 20, 0, 0, time.UTC)
	mac := func(h *Host) { *h = macHost("mbp", session+"\n", boot) }
	proc := func(name string, pid int) Proc {
		return kinfoProc(pid, kinfoRecord(t, name), nil, func() error { return nil })
	}
	procs := map[int]Proc{4213: proc("agent", 4213), 5120: proc("zombie", 5120)}
	agentStarted := time.Unix(1795690012, 7000)

	own := func(pid int64, start uint64, bootID string) *scan.Lock {
		h := &scan.Holder{Pid: pid, PidText: fmt.Sprint(pid), Host: "mbp", Command: "make",
			Token: fmt.Sprintf("%d.%s.1", pid, hex32), Start: start, HasStart: true, BootID: bootID, PidNS: "-"}
		return dirLock(scan.FormatLockctl, scan.Record{File: lockName + "/holder", Info: fileAt(agentStarted.Add(time.Minute)), Raw: []byte("lockctl-lock 1\n"), Holder: h})
	}
	genA := func(at time.Time) *scan.Lock {
		h := holderA(4213, "mbp")
		h.Since = time.Time{}
		r := recA(h)
		r.Info = fileAt(at)
		return dirLock(scan.FormatRegistryA, r)
	}
	run(t, []judgeCase{
		{name: "mac-own-live", host: mac, procs: procs, lock: own(4213, 1795690012_000007, session),
			want: Live, reason: "its start time matches the record"},
		{name: "mac-own-recycled", host: mac, procs: procs, lock: own(4213, 1795690012_000008, session),
			want: Gone, reason: "its start time is 1795690012000007, not the recorded 1795690012000008",
			remove: steps(rm(in(lockPath, "holder")), rmdir(lockPath))},
		{name: "mac-own-zombie", host: mac, procs: procs, lock: own(5120, 1795690100_999999, session),
			want: Gone, reason: "pid 5120 is a zombie (bash)",
			remove: steps(rm(in(lockPath, "holder")), rmdir(lockPath))},
		{name: "mac-own-absent", host: mac, procs: procs, lock: own(6000, 1795690100_000000, session),
			want: Gone, reason: "pid 6000 is not running",
			remove: steps(rm(in(lockPath, "holder")), rmdir(lockPath))},
		{name: "mac-own-other-boot", host: mac, procs: procs, lock: own(4213, 1795690012_000007, "00000000-5A2F-4E5B-9D3C-0E1F2A3B4C5D"),
			want: Gone, reason: "the record is from boot 00000000-5A2F-4E5B-9D3C-0E1F2A3B4C5D, and this is boot " + session,
			remove: steps(rm(in(lockPath, "holder")), rmdir(lockPath)), noProbe: true},
		{name: "mac-own-linux-namespace", host: mac, procs: procs, lock: with(own(4213, 1795690012_000007, session), func(l *scan.Lock) { l.Holders[0].Holder.PidNS = hereNS }),
			want: Foreign, reason: "pid namespace " + hereNS + ", and this is -", noProbe: true},
		{name: "mac-pid-above-pid-max", host: mac, procs: procs, lock: own(100000, 1, session),
			want: Unknown, reason: "out of range (1 to 99999)", noProbe: true},
		{name: "mac-gen-a-written-after-start", host: mac, procs: procs, lock: genA(agentStarted.Add(time.Minute)),
			want: Live, reason: "pid 4213 (agmsg)"},
		{name: "mac-gen-a-written-before-start", host: mac, procs: procs, lock: genA(agentStarted.Add(-time.Minute)),
			want: Recycled, reason: "started at 2026-11-26 10:46:52, after this record was written at 2026-11-26 10:45:52"},
		{name: "mac-gen-b-scope", host: mac, procs: procs, lock: lockB(modified(holderB(4213, hereScope), func(h *scan.Holder) { h.Host = "mbp" })),
			want: Foreign, reason: "lockctl cannot compute this machine's (" + ErrScopeUnsupported.Error() + ")", noProbe: true},
	})
}

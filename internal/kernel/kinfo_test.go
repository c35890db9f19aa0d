package kernel

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/verdict"
	"github.com/rogpeppe/go-internal/txtar"
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
		if s := (verdict.Host{StartBase: macStartBase, Ticks: 1e6}).Started(k.Start); s.Before(macStartBase) || s.Year() > 2300 {
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
		state    verdict.State
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
		{"running", 4213, agent, nil, nil, want{verdict.StateRunning, true, false}},
		{"running as another user", 4213, agent, nil, syscall.EPERM, want{verdict.StateRunning, true, true}},
		{"zombie", 5120, zombie, nil, nil, want{verdict.StateZombie, true, false}},
		{"zombie kill refuses", 5120, zombie, nil, syscall.EPERM, want{verdict.StateZombie, true, true}},
		{"exited since the sysctl", 4213, agent, nil, syscall.ESRCH, want{verdict.StateAbsent, false, false}},
		{"no process", 4213, nil, nil, syscall.ESRCH, want{verdict.StateAbsent, false, false}},
		{"no record, but kill finds one", 4213, nil, nil, nil, want{verdict.StateRunning, false, false}},
		{"no record, kill says EPERM", 4213, nil, nil, syscall.EPERM, want{verdict.StateRunning, false, true}},
		{"sysctl fails", 4213, nil, syscall.ENOMEM, syscall.ESRCH, want{verdict.StateUnknown, false, false}},
		{"record of another pid", 4214, agent, nil, nil, want{verdict.StateUnknown, false, false}},
		{"record cut short", 4213, agent[:300], nil, nil, want{verdict.StateRunning, false, false}},
		{"kill fails oddly", 4213, agent, nil, syscall.EINVAL, want{verdict.StateUnknown, false, false}},
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
			if (p.State == verdict.StateUnknown || (p.State == verdict.StateRunning && !p.HasStart)) && p.Err == nil {
				t.Errorf("a doubt with no reason: %+v", p)
			}
			// The invariant: gone only on the kernel's word.
			if p.State == verdict.StateAbsent && !errors.Is(tc.kill, syscall.ESRCH) {
				t.Errorf("absent, but kill said %v", tc.kill)
			}
			if p.State == verdict.StateZombie && (len(tc.b) != kinfoSize || tc.b[kinfoStat] != sZomb) {
				t.Errorf("a zombie, but the record does not say so")
			}
			if tc.sysErr != nil && asked {
				t.Errorf("kill was asked after the sysctl failed")
			}
		})
	}
}

// TestMacHostFacts: what macHost and kinfoProc make of the recorded bytes
// is what verdict's TestMacHost judges with.
func TestMacHostFacts(t *testing.T) {
	boot := time.Date(2026, 11, 26, 8, 20, 0, 0, time.UTC)
	got := macHost("mbp", "8C6AD2B2-5A2F-4E5B-9D3C-0E1F2A3B4C5D\n", boot)
	want := verdict.Host{Name: "mbp", BootID: "8C6AD2B2-5A2F-4E5B-9D3C-0E1F2A3B4C5D", PidNS: "-", InitialPidNS: true, PidMax: 99999,
		BootTime: boot, StartBase: time.Unix(0, 0), Ticks: 1e6, ScopeErr: verdict.ErrScopeUnsupported}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("macHost = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		name string
		pid  int
		want verdict.Proc
	}{
		{"agent", 4213, verdict.Proc{State: verdict.StateRunning, Start: 1795690012_000007, HasStart: true, Shown: 1795690012_000007, HasShown: true, Comm: "agmsg"}},
		{"zombie", 5120, verdict.Proc{State: verdict.StateZombie, Start: 1795690100_999999, HasStart: true, Shown: 1795690100_999999, HasShown: true, Comm: "bash"}},
	} {
		if got := kinfoProc(tc.pid, kinfoRecord(t, tc.name), nil, func() error { return nil }); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("kinfoProc(%d, %s) = %+v, want %+v", tc.pid, tc.name, got, tc.want)
		}
	}
}

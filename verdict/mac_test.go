package verdict

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// TestMacHost judges macOS locks with the macOS host facts and the probe's
// answers that internal/kernel decodes from the recorded kinfo_proc bytes.
func TestMacHost(t *testing.T) {
	const session = "8C6AD2B2-5A2F-4E5B-9D3C-0E1F2A3B4C5D"
	boot := time.Date(2026, 11, 26, 8, 20, 0, 0, time.UTC)
	// As macHost and kinfoProc make them of the recorded bytes
	// (internal/kernel's TestMacHostFacts).
	mac := func(h *Host) {
		*h = Host{Name: "mbp", BootID: session, PidNS: "-", InitialPidNS: true, PidMax: 99999, BootTime: boot,
			StartBase: time.Unix(0, 0), Ticks: 1e6, ScopeErr: ErrScopeUnsupported}
	}
	procs := map[int]Proc{
		4213: {State: StateRunning, Start: 1795690012_000007, HasStart: true, Comm: "agmsg"},
		5120: {State: StateZombie, Start: 1795690100_999999, HasStart: true, Comm: "bash"},
	}
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
		{name: "mac-own-other-boot", host: mac, procs: procs, lock: own(4213, 1795690012_000008, "00000000-5A2F-4E5B-9D3C-0E1F2A3B4C5D"),
			want: Gone, reason: "the record is from boot 00000000-5A2F-4E5B-9D3C-0E1F2A3B4C5D, and this is boot " + session,
			remove: steps(rm(in(lockPath, "holder")), rmdir(lockPath))},
		{name: "mac-own-linux-namespace", host: mac, procs: procs, lock: with(own(4213, 1795690012_000007, session), func(l *scan.Lock) { l.Holders[0].Holder.PidNS = hereNS }),
			want: Foreign, reason: "pid namespace " + hereNS + ", and this is -", noProbe: true},
		{name: "mac-pid-above-pid-max", host: mac, procs: procs, lock: own(100000, 1, session),
			want: Unknown, reason: "out of range (1 to 99999)", noProbe: true},
		{name: "mac-gen-a-written-after-start", host: mac, procs: procs, lock: genA(agentStarted.Add(time.Minute)),
			want: Live, reason: "pid 4213 (agmsg)"},
		{name: "mac-gen-a-written-before-start", host: mac, procs: procs, lock: genA(agentStarted.Add(-time.Minute)),
			want: Recycled, reason: "started at 2026-11-26T10:46:52Z, after this record was written at 2026-11-26T10:45:52Z"},
		{name: "mac-gen-b-scope", host: mac, procs: procs, lock: lockB(modified(holderB(4213, hereScope), func(h *scan.Holder) { h.Host = "mbp" })),
			want: Foreign, reason: "lockctl cannot compute this machine's (" + ErrScopeUnsupported.Error() + ")", noProbe: true},
	})
}

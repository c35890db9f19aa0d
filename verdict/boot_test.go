package verdict

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// TestBootMismatch: a record whose boot id is not this reader's is gone
// only where every premise agrees (issue 28, case 4): this reader's boot
// id is the kernel's, the record's pid is of this reader's pid namespace
// (or it names none and this reader, in the initial one, finds no process
// with it in any), and no recorded process runs with exactly the recorded
// start time. Otherwise the mismatch decides nothing, and the rest of the
// judgement holds the lock or finds it gone on its own premises.
func TestBootMismatch(t *testing.T) {
	const otherBoot = "11111111-2222-4333-8444-555555555555"
	const containerNS = "pid:[4026532999]"
	shadowed := func(h *Host) {
		h.BootIDErr = errors.New("/proc/sys/kernel/random/boot_id is not on procfs")
	}
	inChild := func(h *Host) { h.PidNS, h.InitialPidNS = containerNS, false }
	lockctl := func(boot, ns string, start uint64, also ...scan.Identity) *scan.Lock {
		h := &scan.Holder{Pid: holderPid, PidText: "4242", Host: here, Command: "make",
			Token: "4242." + hex32 + ".1", Start: start, HasStart: true, BootID: boot, PidNS: ns, Also: also}
		return dirLock(scan.FormatLockctl, scan.Record{File: lockName + "/holder", Info: fileAt(written), Raw: []byte("lockctl-lock 1\n"), Holder: h})
	}
	// filelock's record names no pid namespace; its start token carries
	// the boot id.
	filelock := func(boot string, start uint64) *scan.Lock {
		h := &scan.Holder{Pid: holderPid, PidText: "4242", Host: here, Command: "python", Start: start, HasStart: true, BootID: boot}
		return pidFile(scan.FormatFilelock, "4242\nalpha\n1\n", h, nil)
	}
	thread := map[int][]Namesake{holderPid: {{Pid: 9100, Inner: holderPid, Comm: "python3", NS: containerNS}}}
	lockctlGone := steps(rm(in(lockPath, "holder")), rmdir(lockPath))
	run(t, []judgeCase{
		// (c) A live pid with exactly the recorded start outweighs the
		// mismatch: both facts are in the reason.
		{
			name: "same-start-outweighs", procs: procs(holderPid, alive),
			lock: lockctl(otherBoot, hereNS, alive.Start),
			want: Unknown, reason: "the record is from boot " + otherBoot + ", and this is boot " + hereBoot + ", but pid 4242 (registry.sh) is running with exactly the recorded start time",
		},
		{
			name: "same-start-of-a-process-recorded-with-it", procs: procs(otherPid, alive),
			lock: lockctl(otherBoot, hereNS, alive.Start+7, scan.Identity{Pid: otherPid, Start: alive.Start}),
			want: Unknown, reason: "pid 4343 (registry.sh) is running with exactly the recorded start time",
		},
		{
			name: "start-unreadable", procs: procs(holderPid, Proc{State: StateRunning, Err: errors.New("hidepid")}),
			lock: lockctl(otherBoot, hereNS, alive.Start),
			want: Unknown, reason: "its start time cannot be read (hidepid)",
		},
		{
			name: "probe-unknown", procs: procs(holderPid, Proc{State: StateUnknown, Err: errors.New("EINVAL")}),
			lock: lockctl(otherBoot, hereNS, alive.Start),
			want: Unknown, reason: "whether pid 4242 is running cannot be told",
		},
		{
			name: "another-start-is-gone", procs: procs(holderPid, alive),
			lock: lockctl(otherBoot, hereNS, alive.Start+1),
			want: Gone, reason: "the record is from boot " + otherBoot, remove: lockctlGone,
		},
		{
			name: "absent-is-gone",
			lock: lockctl(otherBoot, hereNS, alive.Start),
			want: Gone, reason: "its holder ended with that boot", remove: lockctlGone,
		},
		// (a) This reader's boot id is a file: the mismatch proves
		// nothing, and the pid is judged as of this boot.
		{
			name: "shadowed-reader-live-holder", host: shadowed, procs: procs(holderPid, alive),
			lock: lockctl(otherBoot, hereNS, alive.Start),
			want: Live, reason: "start time matches the record",
		},
		{
			name: "shadowed-reader-gone-holder", host: shadowed,
			lock: lockctl(otherBoot, hereNS, alive.Start),
			want: Gone, reason: "pid 4242 is not running", remove: lockctlGone,
		},
		{
			// Nor is a matching boot id proof of this kernel: the host
			// name is checked.
			name: "shadowed-reader-renamed-host", host: shadowed,
			lock: with(lockctl(hereBoot, hereNS, alive.Start), func(l *scan.Lock) { l.Holders[0].Holder.Host = "renamed" }),
			want: Foreign, reason: "names host renamed", noProbe: true,
		},
		{
			// ...nor that another namespace of it has ended.
			name: "shadowed-reader-ended-namespace", host: shadowed,
			lock: lockctl(hereBoot, containerNS, alive.Start),
			want: Foreign, reason: "judge it inside that namespace", noProbe: true,
		},
		// (b) Another pid namespace's record (a container may have a boot
		// id of its own): the namespace rule judges it.
		{
			name: "another-namespace", namespaces: map[string]bool{containerNS: true},
			lock: lockctl(otherBoot, containerNS, alive.Start),
			want: Foreign, reason: "names pid namespace " + containerNS, noProbe: true,
		},
		{
			name: "another-namespace-ended",
			lock: lockctl(otherBoot, containerNS, alive.Start),
			want: Foreign, reason: "names pid namespace " + containerNS, noProbe: true,
		},
		{
			// A record that names no namespace, whose pid a container's
			// process has.
			name: "no-namespace-namesake", namesakes: thread,
			lock: filelock(otherBoot, alive.Start),
			want: Unknown, reason: "does not say which pid namespace wrote it, and pid 9100 (python3) is pid 4242 in pid namespace " + containerNS,
		},
		{
			name: "no-namespace-none-has-it",
			lock: filelock(otherBoot, alive.Start),
			want: Gone, reason: "its holder ended with that boot", remove: steps(rm(pidPath)),
		},
		{
			// Read from a child pid namespace, which cannot see whether
			// another namespace has the pid.
			name: "no-namespace-from-a-child", host: inChild, view: errors.New("this lockctl runs in a child pid namespace"),
			lock: filelock(otherBoot, alive.Start),
			want: Unknown, reason: "child pid namespace",
		},
		{
			name: "own-namespace-from-a-child", host: inChild,
			lock: lockctl(otherBoot, containerNS, alive.Start),
			want: Gone, reason: "its holder ended with that boot", remove: lockctlGone,
		},
	})
}

// TestBootMismatchReservation: a reservation of another boot is gone, its
// deadline being on that boot's clock, unless its reserver runs with
// exactly the recorded start time.
func TestBootMismatchReservation(t *testing.T) {
	h := &scan.Holder{Pid: holderPid, PidText: "4242", Start: alive.Start, HasStart: true, BootID: "0b5e7c3a-2f1d-4e6b-8a9c-1d2e3f4a5b6c", PidNS: hereNS, Host: here,
		Command: "dispatch", Token: "4242." + strings.Repeat("ab", 16) + ".1", Since: written, Reserved: true, Until: time.Hour, TimeNS: 0}
	j := &Judge{Host: testHost(), Probe: &fakeProbe{t: t, procs: procs(holderPid, alive)}}
	j.Host.Clock = func() (time.Duration, error) { return time.Minute, nil }
	res := j.Judge(dirLock(scan.FormatLockctl, scan.Record{File: lockName + "/holder", Info: fileAt(written), Holder: h}))
	if res.Verdict != Unknown || !strings.Contains(res.Reason, "exactly the recorded start time") {
		t.Errorf("Judge(a reservation of another boot whose reserver runs) = %s (%s), want unknown", res.Verdict, res.Reason)
	}
}

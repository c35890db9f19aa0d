package verdict

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/scan"
)

// shift is a time namespace's boottime offset of 1000 s, in test ticks.
const shift = 1000 * 100

// Time namespaces, as a reader at the host sees them: the host's and one
// made by unshare --time --boottime 1000.
const (
	hostTimeNS  = "time:[4026531834]"
	shiftedTime = "time:[4026532173]"
)

// otherClock is what a ClockWitness says of a holder in the shifted time
// namespace, read from the host.
var otherClock = fmt.Errorf("pid %d is in time namespace %s, and this reader in %s", holderPid, shiftedTime, hostTimeNS)

// filelockLock is tox-dev/filelock's SoftFileLock of pid, fenced by start
// as its writer was shown it (field 22 in its own time namespace), parsed
// as the scan parses it.
func filelockLock(t *testing.T, pid int, start uint64) *scan.Lock {
	t.Helper()
	boot, _ := new(big.Int).SetString(strings.ReplaceAll(hereBoot, "-", ""), 16)
	tok := new(big.Int).Or(new(big.Int).Lsh(boot, 64), new(big.Int).SetUint64(start))
	raw := fmt.Sprintf("%d\n%s\n%s\n", pid, here, tok)
	h, err := scan.ParseFilelock([]byte(raw))
	if err != nil || !h.RawStart {
		t.Fatalf("ParseFilelock(%q) = %+v, %v: want a raw start time", raw, h, err)
	}
	l := pidFile(scan.FormatFilelock, raw, h, nil)
	l.Producer = scan.ProducerFilelock
	return l
}

// inShifted is alive as a reader in the shifted time namespace is shown
// it: Start from the real boot, Shown with the offset in it.
func inShifted(p Proc) Proc {
	p.Shown += shift
	return p
}

// TestJudgeClocks: a start time recorded as its writer was shown it
// (filelock) and one read here prove another process only when they are
// in one clock (docs/verdicts.md, "Start times and clocks"). lockctl's own
// records count from the real boot, as the probe's Start does.
func TestJudgeClocks(t *testing.T) {
	run(t, []judgeCase{
		{
			// A holder in unshare --time --boottime 1000, read from the
			// host: it wrote its field 22 with the offset in it.
			name:   "raw-start-of-another-time-namespace-is-unknown",
			procs:  procs(holderPid, alive),
			clocks: map[int]error{holderPid: otherClock},
			lock:   filelockLock(t, holderPid, alive.Start+shift),
			want:   Unknown, reason: "in time namespace time:[4026532173], and this reader in time:[4026531834]",
		},
		{
			name:      "raw-start-mismatch-without-a-clock-witness-is-unknown",
			procs:     procs(holderPid, alive),
			clockless: true,
			lock:      filelockLock(t, holderPid, alive.Start+7),
			want:      Unknown, reason: "cannot tell which time namespace",
		},
		{
			name:  "raw-start-mismatch-in-one-clock-is-gone",
			procs: procs(holderPid, alive),
			lock:  filelockLock(t, holderPid, alive.Start+7),
			want:  Gone, reason: "not the recorded",
			remove: steps(rm(pidPath)),
		},
		{
			// The same holder judged inside its own time namespace
			// (nsenter -T): field 22 as shown there is what it wrote.
			name:  "raw-start-read-inside-the-writers-time-namespace-is-live",
			procs: procs(holderPid, inShifted(alive)),
			lock:  filelockLock(t, holderPid, alive.Start+shift),
			want:  Live, reason: "its start time matches the record",
		},
		{
			name:  "raw-start-inside-a-time-namespace-mismatch-is-gone",
			procs: procs(holderPid, inShifted(alive)),
			lock:  filelockLock(t, holderPid, alive.Start+shift+7),
			want:  Gone, reason: fmt.Sprintf("its start time is %d, not the recorded %d", alive.Start+shift, alive.Start+shift+7),
			remove: steps(rm(pidPath)),
		},
		{
			// An exact match needs no proof of the clock: held.
			name:      "raw-start-exact-match-is-live-whatever-the-clock",
			procs:     procs(holderPid, alive),
			clocks:    map[int]error{holderPid: otherClock},
			clockless: true,
			lock:      filelockLock(t, holderPid, alive.Start),
			want:      Live, reason: "its start time matches the record",
		},
		{
			name:  "raw-start-unreadable-is-unknown",
			procs: procs(holderPid, Proc{State: StateRunning, Err: errors.New("cannot read /proc/4242/stat: permission denied")}),
			lock:  filelockLock(t, holderPid, alive.Start+7),
			want:  Unknown, reason: "its start time cannot be read",
		},
		{
			// lockctl's own record counts from the real boot, as Start
			// does, whatever time namespace wrote it or reads it.
			name:   "lockctl-start-mismatch-needs-no-clock-witness",
			procs:  procs(holderPid, inShifted(alive)),
			clocks: map[int]error{holderPid: otherClock},
			lock:   pidLock(fenced(holderPid, alive.Start+7, hereBoot)),
			want:   Gone, reason: "not the recorded",
			remove: steps(rm(pidPath)),
		},
		{
			name:   "lockctl-start-is-compared-from-the-real-boot",
			procs:  procs(holderPid, inShifted(alive)),
			clocks: map[int]error{holderPid: otherClock},
			lock:   pidLock(fenced(holderPid, alive.Start, hereBoot)),
			want:   Live, reason: "its start time matches the record",
		},
	})
}

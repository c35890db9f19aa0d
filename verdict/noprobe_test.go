package verdict

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/scan"
)

// TestJudgeWithoutProbe guards the fail-closed platforms (issue 9): with no
// process probe (NoProbe, the KernelProbe of every platform but Linux) and
// only the host name known (BareHost), every lock that would read gone on
// Linux reads unknown, and nothing is proposed for removal.
func TestJudgeWithoutProbe(t *testing.T) {
	if p := (NoProbe{}).Probe(holderPid); p.State != StateUnknown || !errors.Is(p.Err, ErrNoProbe) {
		t.Fatalf("NoProbe.Probe(%d) = %+v, want StateUnknown, %v", holderPid, p, ErrNoProbe)
	}
	host := BareHost()
	host.Name = here // so that a registry-a record's host reads as this one
	gone := holderB(holderPid, hereScope)
	tests := []struct {
		name   string
		lock   *scan.Lock
		reason string
	}{
		{"pid-file", pidLock(pidHolder(holderPid)), "no process probe on this platform"},
		{"uucp", pidFile(scan.FormatUUCP, "      4242\n", pidHolder(holderPid), nil), "no process probe on this platform"},
		{"pid-fenced", pidLock(fenced(holderPid, alive.Start, hereBoot)), ""},
		{"boot-id-mismatch", pidLock(fenced(holderPid, alive.Start, "0f0e0d0c-0000-4000-8000-000000000000")), ""},
		{"registry-a", lockA(holderA(holderPid, here)), "no process probe on this platform"},
		{"registry-b-with-scope", lockB(gone), "no process probe on this platform"},
		{"registry-a-claimed", with(lockA(holderA(holderPid, here)), func(l *scan.Lock) {
			l.Claims = []scan.Claim{breakA(breaker, holderA(otherPid, here))}
		}), ""},
		{"pid-max-itself", pidLock(pidHolder(testPidMax)), "no process probe on this platform"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &Judge{Host: host, Probe: NoProbe{}, Evidence: NoEvidence{}}
			r := j.Judge(tt.lock)
			if r.Verdict != Unknown || !strings.Contains(r.Reason, tt.reason) {
				t.Errorf("Judge = %s (%s), want %s (%s)", r.Verdict, r.Reason, Unknown, tt.reason)
			}
			if len(r.Remove) > 0 {
				t.Errorf("Judge proposes removing %v without a probe, want nothing", r.Remove)
			}
		})
	}
}

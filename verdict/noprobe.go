package verdict

import (
	"errors"
	"math"
	"os"
)

// ErrNoProbe is why every process question is StateUnknown on a platform
// lockctl has no process probe for (docs/platforms.md).
var ErrNoProbe = errors.New("no process probe on this platform")

// NoProbe is the probe of a platform without one. It fails closed: every
// pid is StateUnknown (ErrNoProbe), so every verdict that needs the kernel
// is unknown, and nothing is swept or broken on the strength of a pid. It
// is internal/kernel's KernelProbe wherever lockctl has no real one, and is defined on every
// platform so that its consequences are tested on Linux too.
type NoProbe struct{}

// Probe implements Probe.
func (NoProbe) Probe(pid int) Proc {
	if pid <= 0 {
		return Proc{State: StateUnknown, Err: errNotPid(pid)}
	}
	return Proc{State: StateUnknown, Err: ErrNoProbe}
}

// NoEvidence is the kernel evidence of a platform without a way to read
// it: it never finds a holder and always says its look was incomplete, so
// finding none proves nothing.
type NoEvidence struct{}

// Holders implements Evidence.
func (NoEvidence) Holders(dev, ino uint64) ([]KernelHolder, bool) { return nil, false }

// BareHost is what internal/kernel's LocalHost knows on a platform without a probe: the host
// name only. Boot id, machine id, pid namespace and boot time stay zero, so
// the verdicts that need them stay on the held side, and the generation B
// scope cannot be computed.
func BareHost() Host {
	var h Host
	h.Name, _ = os.Hostname()
	h.ScopeErr = ErrNoProbe
	// Any pid is in range: the probe, not the range check, says why the
	// answer is unknown.
	h.PidMax = math.MaxInt32
	return h
}

//go:build !linux && !darwin

package verdict

// KernelProbe has no kernel to ask on this platform: it is NoProbe,
// and fails closed (every pid is StateUnknown, ErrNoProbe).
type KernelProbe struct{}

// Probe implements Probe.
func (KernelProbe) Probe(pid int) Proc { return NoProbe{}.Probe(pid) }

// LocalHost reads what it can of this machine: BareHost.
func LocalHost() Host { return BareHost() }

// Package kernel is lockctl's access to the running kernel: KernelProbe
// (is this pid running, since when, and in which pid namespaces), the
// kernel evidence of who holds a file (KernelEvidence: /proc/locks and
// every process's open files), and LocalHost (this machine, boot and pid
// namespace). It implements verdict's Probe, PidSpace, Evidence, LockTable
// and ScopeWitness (and on Linux ClockWitness), and holds every per-OS file
// of that work, as go-internal's lockedfile/internal/filelock sits under
// lockedfile: verdict keeps the rules and never touches the kernel.
//
// Nothing here forks (no ps, lsof or fuser). Every answer that is not the
// kernel's own word is a doubt, which the verdicts read as held.
package kernel

import (
	"fmt"

	"github.com/lockctl/lockctl/verdict"
)

// InheritedNote ends the How of a holder named only by a lock whose taker
// has exited and whose holder could not be found: its Pid is the taker's.
const InheritedNote = " (its locker has exited; a process that inherited the descriptor holds it)"

// KernelProbe asks the running kernel whether a pid is running, since when,
// and in which pid namespaces; each platform answers in its own file
// (probe_linux.go, probe_darwin.go; elsewhere it fails closed). On Linux
// it is also a verdict.ClockWitness (which time namespace a pid is in);
// elsewhere it is not one, and a record of a start time in its writer's
// clock (filelock's) that differs from the one read here stays held. It
// never forks.
type KernelProbe struct{}

// Probe implements verdict.Probe.
func (KernelProbe) Probe(pid int) verdict.Proc {
	if pid <= 0 {
		// kill(0) and kill(-1) address process groups: never ask.
		return verdict.Proc{State: verdict.StateUnknown, Err: errNotPid(pid)}
	}
	return probe(pid)
}

// errNotPid is why a probe never asks about pid: kill(0) and kill(-1)
// address process groups.
func errNotPid(pid int) error { return fmt.Errorf("pid %d is not a process id", pid) }

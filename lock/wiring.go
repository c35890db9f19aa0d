package lock

import (
	"errors"

	"github.com/lockctl/lockctl/verdict"
)

// Kernel is what package lock asks of the running kernel. internal/judges
// makes the real one (judges.Kernel), and internal/cli hands it in
// through Options.Kernel (and the kernel argument of ReleaseFor and
// ReleaseReservation). Where none is given, lock fails closed: the host
// reads as unknown, so nothing can be fenced or acquired, no start time
// can be read, and every holder is judged with verdict.NoProbe, every doubt
// held; it never asks the real kernel by accident.
type Kernel interface {
	// Host is this machine: boot id, pid namespace, host name, clocks.
	Host() verdict.Host
	// Start is the start time of the running pid, the fence of a record;
	// an error for a pid that is not running or cannot be read.
	Start(pid int) (uint64, error)
	// AcquireJudge is the judge of every acquire try (and of the sweep of
	// a gone lock it makes): it must ask the kernel afresh on every
	// judgement (judges.Acquire).
	AcquireJudge(host verdict.Host) *verdict.Judge
	// ReleaseJudge judges an interrupted release of the caller's own
	// (judges.Release).
	ReleaseJudge(host verdict.Host) *verdict.Judge
	// ReserveJudge judges a reservation being adopted or released
	// (judges.Reserve).
	ReserveJudge(host verdict.Host) *verdict.Judge
	// LockHolders are the processes holding a kernel lock on the file
	// (dev, ino) at dir/name, in the kernel's order, leaving out those
	// that only have it open and locks whose taker has exited.
	LockHolders(dir, name string, dev, ino uint64) []verdict.KernelHolder
	// OthersOn are the processes other than this one waiting for a kernel
	// lock on the file (dev, ino) at dir/name, or having it open; complete
	// is false when not all of them could be seen.
	OthersOn(dir, name string, dev, ino uint64) (others []verdict.KernelHolder, complete bool)
}

// tableWaiters is a Kernel that can list the requests blocked behind a
// kernel lock on a file from the lock table alone, without OthersOn's
// look at every process's open files: what a release asks when nobody
// else has opened its lock (openWatch).
type tableWaiters interface {
	WaitersOn(dir, name string, dev, ino uint64) []verdict.KernelHolder
}

// errNoKernel is what a lock given no Kernel says of every start time.
var errNoKernel = errors.New("no kernel was wired into package lock (lock.Options.Kernel)")

// noKernel is the Kernel of a caller that gave none: it fails closed.
type noKernel struct{}

func (noKernel) Host() verdict.Host            { return verdict.Host{} }
func (noKernel) Start(pid int) (uint64, error) { return 0, errNoKernel }
func (noKernel) judge(h verdict.Host) *verdict.Judge {
	return &verdict.Judge{Host: h, Probe: verdict.NoProbe{}}
}
func (k noKernel) AcquireJudge(h verdict.Host) *verdict.Judge { return k.judge(h) }
func (k noKernel) ReleaseJudge(h verdict.Host) *verdict.Judge { return k.judge(h) }
func (k noKernel) ReserveJudge(h verdict.Host) *verdict.Judge { return k.judge(h) }
func (noKernel) LockHolders(dir, name string, dev, ino uint64) []verdict.KernelHolder {
	return nil
}

func (noKernel) OthersOn(dir, name string, dev, ino uint64) ([]verdict.KernelHolder, bool) {
	return nil, false
}

// kernelOr returns k, or where it is nil the Kernel that fails closed.
func kernelOr(k Kernel) Kernel {
	if k == nil {
		return noKernel{}
	}
	return k
}

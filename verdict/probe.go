package verdict

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// State is what the kernel says about a pid.
type State int

// The states a probe can report. StateUnknown is every doubt.
const (
	StateUnknown State = iota
	StateAbsent        // no such pid in this pid namespace
	StateRunning       // the pid exists and is not a zombie
	StateZombie        // exited (Z) or dead (X): can never release anything
)

// Proc is what a probe found out about one pid.
type Proc struct {
	State State
	// Start is the process start time, valid when HasStart: on Linux in
	// clock ticks since boot (field 22 of /proc/<pid>/stat), on macOS in
	// microseconds since the Unix epoch (p_starttime). Host.Started turns
	// either into a time.
	Start    uint64
	HasStart bool
	// Shown, valid when HasShown, is the start time exactly as this reader
	// is shown it: on Linux field 22 with this reader's time namespace's
	// boottime offset still in it (Start has it taken off), on macOS
	// Start. It is what a record of field 22 as its writer read it
	// (scan.Holder.RawStart) is compared with, once a ClockWitness has
	// said the two are in one clock.
	Shown    uint64
	HasShown bool
	// Comm is the command name from /proc/<pid>/stat, where readable.
	Comm string
	// Denied is true when kill(pid, 0) said EPERM: the process exists but
	// belongs to someone this process may not signal.
	Denied bool
	// Err says why State is StateUnknown, or why Start could not be read.
	Err error
}

// Probe answers "what is pid doing?" for one pid. A Probe must never report
// StateAbsent or StateZombie unless the kernel said so; every doubt is
// StateUnknown (or StateRunning without a start time).
type Probe interface {
	Probe(pid int) Proc
}

// ClockWitness is a Probe that can tell whether a start time shown to this
// reader (Proc.Shown) and one a process read of itself are in one clock.
// On Linux field 22 of /proc/<pid>/stat counts from the boot as the
// reader's time namespace shifts it, so a writer in another time namespace
// recorded its start time in another clock than the one this reader sees.
type ClockWitness interface {
	// SameClock returns nil when field 22 of pid, as this reader is shown
	// it, is in the clock pid itself reads it in: pid is in this reader's
	// time namespace, and this reader's offsets are its own. Any other
	// answer, or one that cannot be read, is an error that says why (it
	// names both namespaces where it can), and a start-time mismatch then
	// proves nothing. A process can change its time namespace (setns),
	// so the answer is asked for afresh each time, never remembered.
	SameClock(pid int) error
}

// CachingProbe remembers each pid's answer for the life of one run, so a
// registry where many locks share a holder asks the kernel once, and so
// the index of namesakes (PidSpace), where Next can give one. Whether a pid
// namespace is in use is never remembered. It is safe for concurrent use.
type CachingProbe struct {
	Next Probe
	mu   sync.Mutex
	seen map[int]Proc
	ns   namesakes
}

// Probe implements Probe.
func (c *CachingProbe) Probe(pid int) Proc {
	c.mu.Lock()
	p, ok := c.seen[pid]
	c.mu.Unlock()
	if ok {
		return p
	}
	p = c.Next.Probe(pid)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[int]Proc{}
	}
	c.seen[pid] = p
	return p
}

// SameClock implements ClockWitness by asking the next probe, every time.
func (c *CachingProbe) SameClock(pid int) error {
	w, ok := c.Next.(ClockWitness)
	if !ok {
		return errNoClock
	}
	return w.SameClock(pid)
}

// Host is what lockctl knows about the machine, boot and pid namespace it
// runs in. Zero fields mean "could not tell", and every verdict that needs
// one then stays on the held side.
type Host struct {
	Name   string
	BootID string
	// BootIDErr says why BootID, though read, is not the kernel's word (a
	// file bind-mounted over /proc/sys/kernel/random/boot_id, as some
	// sandboxes give each container), or nil when it is. A record whose
	// boot id differs from such a BootID is no proof of another boot, nor
	// one whose boot id equals it proof of this kernel. BootID is kept as
	// read all the same: records this reader writes carry it, and scope
	// digests hash it, as every other process in its view does.
	BootIDErr error
	PidNS     string
	// InitialPidNS says this reader is in the machine's initial pid
	// namespace (on macOS, which has no pid namespaces, always).
	InitialPidNS bool
	// Ptrace says this reader is root with CAP_SYS_PTRACE in effect: a
	// process whose open files it still cannot read hides them even from
	// root (a sandbox's pid 1, a security module), and telling it to run
	// as root would send it nowhere (LookHint).
	Ptrace    bool
	MachineID string
	// Scope is the generation B scope digest of this machine, boot and pid
	// namespace, or "" with ScopeErr saying why it cannot be computed.
	Scope    string
	ScopeErr error
	// PidMax is /proc/sys/kernel/pid_max.
	PidMax int64
	// BootTime is when this host booted: btime from /proc/stat on Linux,
	// kern.boottime on macOS.
	BootTime time.Time
	// StartBase is what process start times count from, and Ticks how many
	// of them make a second: on Linux the boot (zero StartBase means
	// BootTime) and the clock tick rate; on macOS the Unix epoch and 1e6.
	StartBase time.Time
	Ticks     int64
	// Clock reads this time namespace's CLOCK_MONOTONIC (nil where it
	// cannot be read), and ClockOffset is that namespace's monotonic
	// offset (zero outside one), with ClockErr when it cannot be read: a
	// reservation's deadline is judged by them.
	Clock       func() (time.Duration, error)
	ClockOffset time.Duration
	ClockErr    error
}

// LookHint says, for a look at every process that missed some, what would
// complete it from this reader: running as root with CAP_SYS_PTRACE, or,
// for a reader that already does, nothing here.
func (h Host) LookHint() string {
	if h.Ptrace {
		return "some processes hide them even from root with CAP_SYS_PTRACE, as a sandbox's pid 1 or a security module does, so it cannot be completed from here"
	}
	return "run as root with CAP_SYS_PTRACE to be sure"
}

// Started converts a process start time (Proc.Start) to wall-clock time.
// It is evidence only: on Linux the conversion drifts when the clock steps.
func (h Host) Started(ticks uint64) time.Time {
	base := h.StartBase
	if base.IsZero() {
		base = h.BootTime
	}
	if base.IsZero() || h.Ticks <= 0 {
		return time.Time{}
	}
	// Whole seconds first: ticks*time.Second overflows after ~3 years up.
	t := uint64(h.Ticks)
	return base.Add(time.Duration(ticks/t)*time.Second + time.Duration(ticks%t)*time.Second/time.Duration(t))
}

// ScopeDigest is the generation B scope: the SHA-256, in lowercase hex, of
// "agmsg-lock-scope:<machine-id>:<boot_id>:<pid-namespace link>".
func ScopeDigest(machineID, bootID, pidNS string) string {
	sum := sha256.Sum256([]byte("agmsg-lock-scope:" + machineID + ":" + bootID + ":" + pidNS))
	return hex.EncodeToString(sum[:])
}

// errNotPid is why a probe never asks about pid: kill(0) and kill(-1)
// address process groups.
func errNotPid(pid int) error { return fmt.Errorf("pid %d is not a process id", pid) }

// ErrScopeUnsupported is why a generation B scope cannot be computed on
// macOS: it hashes the IOPlatformUUID, which lockctl does not read there
// (it needs IOKit, or gethostuuid(2) through libSystem; no fork).
var ErrScopeUnsupported = errors.New("the generation B scope of macOS hashes the IOPlatformUUID, which lockctl cannot read without IOKit")

// errNoClock is why a probe that cannot compare time namespaces proves no
// start-time mismatch of a record in its writer's clock.
var errNoClock = errors.New("this probe cannot tell which time namespace a process is in")

// errNoPidSpace is why a probe that cannot look into other pid namespaces
// proves nothing about them.
var errNoPidSpace = errors.New("this probe cannot look into other pid namespaces")

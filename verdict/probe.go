package verdict

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// ParseStat parses the content of /proc/<pid>/stat. The command (field 2)
// is in parentheses and may itself contain spaces and ')', so the fields
// after it are found from the last ')'.
func ParseStat(b []byte) (state byte, comm string, start uint64, err error) {
	s := string(b)
	open := strings.IndexByte(s, '(')
	end := strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return 0, "", 0, fmt.Errorf("no command field")
	}
	comm = s[open+1 : end]
	fields := strings.Fields(s[end+1:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, "", 0, fmt.Errorf("too few fields")
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, "", 0, fmt.Errorf("bad start time: %w", err)
	}
	return fields[0][0], comm, start, nil
}

// statExited reports whether b, the content of /proc/<pid>/stat, is that
// of a process that has exited: state Z (zombie) or X (dead) with a single
// thread. A process whose main thread has called pthread_exit shows Z while
// its other threads run on: field 20 (num_threads) says so, and such a
// process is alive. A thread count that cannot be read is doubt: alive.
func statExited(b []byte, state byte) bool {
	if state != 'Z' && state != 'X' && state != 'x' {
		return false
	}
	f, ok := statField(b, 20) // num_threads
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(f, 10, 64)
	return err == nil && n <= 1
}

// statField returns field n (numbered from 1, as in proc(5); n >= 3) of a
// /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat, counted from after the
// command's last ')'.
func statField(b []byte, n int) (string, bool) {
	end := strings.LastIndexByte(string(b), ')')
	if end < 0 || n < 3 {
		return "", false
	}
	fields := strings.Fields(string(b[end+1:]))
	if len(fields) < n-2 {
		return "", false
	}
	return fields[n-3], true
}

// Host is what lockctl knows about the machine, boot and pid namespace it
// runs in. Zero fields mean "could not tell", and every verdict that needs
// one then stays on the held side.
type Host struct {
	Name      string
	BootID    string
	PidNS     string
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

// errNoPidSpace is why a probe that cannot look into other pid namespaces
// proves nothing about them.
var errNoPidSpace = errors.New("this probe cannot look into other pid namespaces")

//go:build linux

package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// probe asks the running Linux kernel about pid. Where the kernel has pidfds it pins the process
// first, so the /proc/<pid>/stat it reads cannot belong to a later process
// that reused the pid: pidfd_open, read stat, then pidfd_send_signal(0). If
// the signal still reaches the pinned process, the stat read was of it.
// Without pidfds it falls back to kill(pid, 0) around the read, which
// narrows that window but cannot close it.
func probe(pid int) verdict.Proc {
	fd, err := retryFd(func() (int, error) { return unix.PidfdOpen(pid, 0) })
	switch {
	case err == unix.ESRCH:
		return verdict.Proc{State: verdict.StateAbsent}
	case err != nil:
		// ENOSYS (before Linux 5.3), EINVAL (a thread id), a seccomp EPERM:
		// fall back to kill.
		return probeKill(pid)
	}
	defer unix.Close(fd)
	p, statErr := readStat(pid)
	serr := retry(func() error { return unix.PidfdSendSignal(fd, 0, nil, 0) })
	switch serr {
	case nil:
	case unix.EPERM:
		p.Denied = true
	case unix.ESRCH:
		// It exited (and was reaped) since it was pinned: it is gone, and so
		// whatever stat said is history.
		return verdict.Proc{State: verdict.StateAbsent}
	default:
		return verdict.Proc{State: verdict.StateUnknown, Err: fmt.Errorf("cannot signal pid %d: %w", pid, serr)}
	}
	return finish(pid, p, statErr)
}

func probeKill(pid int) verdict.Proc {
	kerr := retry(func() error { return unix.Kill(pid, 0) })
	var p verdict.Proc
	switch kerr {
	case nil:
	case unix.ESRCH:
		return verdict.Proc{State: verdict.StateAbsent}
	case unix.EPERM:
		// It exists; we may not signal it. That is alive, never dead.
		p.Denied = true
	default:
		return verdict.Proc{State: verdict.StateUnknown, Err: fmt.Errorf("kill(%d, 0): %w", pid, kerr)}
	}
	q, statErr := readStat(pid)
	q.Denied = p.Denied
	return finish(pid, q, statErr)
}

// finish turns a stat read of a process known to exist into a verdict.Proc. The
// process exists, so a stat that cannot be read (hidepid, a /proc that is
// not mounted) leaves it running with no start time: alive, never dead.
func finish(pid int, p verdict.Proc, statErr error) verdict.Proc {
	if statErr != nil {
		return verdict.Proc{State: verdict.StateRunning, Denied: p.Denied, Err: statErr}
	}
	return p
}

// procOurs says whether the /proc mounted here is of this process's pid
// namespace. After unshare --pid without a new /proc, or in a container
// that kept its host's, pidfd_open and kill answer in this namespace while
// /proc/<pid> describes whatever has that number in another: a live
// holder would take on a stranger's state and start time. Such a /proc is
// not read at all.
var procOurs = sync.OnceValue(func() error {
	self, err := os.Readlink("/proc/self")
	if err != nil {
		return fmt.Errorf("cannot read /proc/self: %w", errors.Unwrap(err))
	}
	if self != strconv.Itoa(os.Getpid()) {
		return fmt.Errorf("the /proc mounted here belongs to another pid namespace (/proc/self is %s, this is pid %d): mount this namespace's /proc", self, os.Getpid())
	}
	// The same number in both namespaces (by chance, or clone3's set_tid)
	// passes the test above; NSpid lists this process's pid in every
	// namespace from /proc's down to its own, and is one pid only when
	// they are the same.
	b, err := readFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("cannot read /proc/self/status: %w", errors.Unwrap(err))
	}
	if pids := nsPids(string(b)); len(pids) > 1 {
		return fmt.Errorf("the /proc mounted here belongs to another pid namespace (this process is pid %s there): mount this namespace's /proc", pids[0])
	}
	return nil
})

// nsPids returns the pids of the NSpid line of a /proc/<pid>/status: one
// for each pid namespace from that of the /proc read down to the
// process's own. A kernel before 4.1 has no such line: nil.
func nsPids(status string) []string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, "NSpid:"); ok {
			return strings.Fields(v)
		}
	}
	return nil
}

func readStat(pid int) (verdict.Proc, error) {
	if err := procOurs(); err != nil {
		return verdict.Proc{}, err
	}
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := readFile(path)
	if err != nil {
		return verdict.Proc{}, fmt.Errorf("cannot read %s: %w", path, errors.Unwrap(err))
	}
	state, comm, start, err := ParseStat(b)
	if err != nil {
		return verdict.Proc{}, fmt.Errorf("cannot parse %s: %w", path, err)
	}
	p := verdict.Proc{State: verdict.StateRunning, Comm: comm, Start: start, HasStart: true, Shown: start, HasShown: true}
	if statExited(b, state) {
		p.State = verdict.StateZombie
	}
	// The kernel adds the reader's time namespace boottime offset to field
	// 22 (Shown keeps it, for records of field 22 as their writer was
	// shown it); take it off, so that every reader, and every record of
	// lockctl's, counts from the real boot. An offset that cannot be taken
	// off exactly leaves no start time: a fence compared against it would
	// be a guess.
	off := bootOffset()
	switch {
	case off.err != nil:
		p.Start, p.HasStart, p.Err = 0, false, off.err
	case off.ticks < 0 && !startPlausible(start):
		p.Start, p.HasStart, p.Err = 0, false, fmt.Errorf("%s: start time %d is after now: the process started before this time namespace's boot (offset %d ticks), so its start cannot be read here", path, start, off.ticks)
	case off.ticks > 0 && start < uint64(off.ticks):
		p.Start, p.HasStart, p.Err = 0, false, fmt.Errorf("%s: start time %d is below this time namespace's boottime offset (%d ticks)", path, start, off.ticks)
	default:
		p.Start = uint64(int64(start) - off.ticks)
	}
	return p, nil
}

// timeOffset is the boottime offset of this process's time namespace
// (/proc/self/timens_offsets): zero outside a time namespace.
type timeOffset struct {
	d     time.Duration
	ticks int64 // d in clock ticks, exactly
	err   error
}

// monoOffset is the monotonic offset of this process's time namespace: what
// it adds to the host's CLOCK_MONOTONIC. Zero on a kernel without time
// namespaces.
func monoOffset() (time.Duration, error) {
	b, err := timensOffsets()
	if err != nil {
		return 0, err
	}
	if b == nil {
		return 0, nil
	}
	return parseOffset(b, "monotonic")
}

// parseOffset reads the line of clock (monotonic or boottime) of a
// timens_offsets file: "<clock> <seconds> <nanoseconds>".
func parseOffset(b []byte, clock string) (time.Duration, error) {
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != clock {
			continue
		}
		sec, err1 := strconv.ParseInt(f[1], 10, 64)
		nsec, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || nsec < 0 || nsec >= 1e9 || sec > 1<<33 || sec < -(1<<33) {
			break
		}
		return time.Duration(sec)*time.Second + time.Duration(nsec), nil
	}
	return 0, fmt.Errorf("cannot parse /proc/self/timens_offsets: %q", b)
}

// timensOffsets is /proc/self/timens_offsets, read once, or nil on a kernel
// without time namespaces. The file shows the offsets of the namespace this
// process's children are made in (ns/time_for_children), which are its own
// only while its ns/time is that namespace too: after an unshare(2) of
// CLONE_NEWTIME with no exec since, they differ, and then it is an error.
// It is read once: a Go program, having threads, cannot change its time
// namespace (setns(2) refuses a multithreaded caller; unshare moves only
// the children of the calling thread).
var timensOffsets = sync.OnceValues(func() ([]byte, error) {
	own, err := ownTimeNS()
	if err != nil {
		return nil, err
	}
	if own == "" {
		return nil, nil // a kernel without time namespaces
	}
	b, err := readFile("/proc/self/timens_offsets")
	if err != nil {
		return nil, fmt.Errorf("cannot read /proc/self/timens_offsets: %w", errors.Unwrap(err))
	}
	return b, nil
})

// ownTimeNS is the link of this process's time namespace
// (/proc/self/ns/time, e.g. "time:[4026531834]"), or "" on a kernel without
// time namespaces (before Linux 5.6: neither link exists). It fails when a
// link cannot be read, when the /proc mounted here is not this process's,
// and when ns/time and ns/time_for_children differ: this process's own
// offsets then cannot be read, and /proc/self/timens_offsets shows another
// namespace's.
var ownTimeNS = sync.OnceValues(func() (string, error) {
	// Of another pid namespace's /proc, /proc/self may be missing, and
	// its missing links would pass for a kernel without time namespaces.
	if err := procOurs(); err != nil {
		return "", err
	}
	own, err := os.Readlink("/proc/self/ns/time")
	kids, kerr := os.Readlink("/proc/self/ns/time_for_children")
	switch {
	case errors.Is(err, fs.ErrNotExist) && errors.Is(kerr, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("cannot read /proc/self/ns/time: %w", errors.Unwrap(err))
	case kerr != nil:
		return "", fmt.Errorf("cannot read /proc/self/ns/time_for_children: %w", errors.Unwrap(kerr))
	case own != kids:
		return "", fmt.Errorf("this process is in time namespace %s, and its children are made in %s (it left its time namespace without an exec): /proc/self/timens_offsets shows the offsets of the latter, and this process's own cannot be read", own, kids)
	}
	return own, nil
})

var bootOffset = sync.OnceValue(func() timeOffset {
	b, err := timensOffsets()
	if err != nil {
		return timeOffset{err: err}
	}
	if b == nil {
		return timeOffset{} // a kernel without time namespaces
	}
	return parseBootOffset(b, clockTicks())
})

// sameClock says whether field 22 of pid, as this process is shown it, is
// in the clock pid reads it in: nil when pid's time namespace is this
// process's, and this process's offsets are its own (ownTimeNS). A link
// that cannot be read is an error: pid 1 of some machines hides its
// namespaces even from root.
func sameClock(pid int) error {
	own, err := ownTimeNS()
	if err != nil {
		return err
	}
	if own == "" {
		return nil // no time namespaces: one clock for every process
	}
	path := "/proc/" + strconv.Itoa(pid) + "/ns/time"
	theirs, err := os.Readlink(path)
	if err != nil {
		return fmt.Errorf("cannot read %s (this reader is in time namespace %s): %w", path, own, errors.Unwrap(err))
	}
	if theirs != own {
		return fmt.Errorf("pid %d is in time namespace %s, and this reader in %s", pid, theirs, own)
	}
	return nil
}

// SameClock implements verdict.ClockWitness.
func (KernelProbe) SameClock(pid int) error {
	if pid <= 0 {
		return errNotPid(pid)
	}
	return sameClock(pid)
}

// parseBootOffset reads the boottime line of a timens_offsets file
// ("boottime <seconds> <nanoseconds>") and converts it to clock ticks, which
// it must be a whole number of: field 22 is rounded after the offset is
// added, so any other offset cannot be taken off exactly.
func parseBootOffset(b []byte, ticks int64) timeOffset {
	d, err := parseOffset(b, "boottime")
	if err != nil || ticks <= 0 {
		return timeOffset{err: fmt.Errorf("cannot parse /proc/self/timens_offsets: %q", b)}
	}
	per := time.Second / time.Duration(ticks)
	if d%per != 0 {
		return timeOffset{err: fmt.Errorf("this time namespace's boottime offset (%s) is not a whole number of clock ticks, so start times cannot be compared", d)}
	}
	return timeOffset{d: d, ticks: int64(d / per)}
}

func retryFd(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// pidMaxLimit is PID_MAX_LIMIT on 64-bit Linux, the most pid_max can be.
const pidMaxLimit = 4 << 20

// LocalHost reads the facts of this machine, boot and pid namespace. It
// never fails: a fact it cannot read is left zero and the verdicts that
// need it stay on the held side.
func LocalHost() verdict.Host {
	var h verdict.Host
	h.Name, _ = os.Hostname()
	h.BootID, h.BootIDErr = readBootID(bootIDPath)
	h.PidNS, _ = os.Readlink("/proc/self/ns/pid")
	// /proc/self always names this process, whichever pid namespace the
	// /proc mounted here is of, so the link read is its own.
	h.InitialPidNS = h.PidNS == initialPidNS
	h.Ptrace = os.Geteuid() == 0 && hasCap(capSysPtrace)
	h.MachineID = firstLine("/etc/machine-id")
	switch {
	case h.MachineID == "":
		h.ScopeErr = errors.New("/etc/machine-id cannot be read")
	case h.BootID == "":
		h.ScopeErr = errors.New("/proc/sys/kernel/random/boot_id cannot be read")
	case h.PidNS == "":
		h.ScopeErr = errors.New("/proc/self/ns/pid cannot be read")
	default:
		h.Scope = verdict.ScopeDigest(h.MachineID, h.BootID, h.PidNS)
	}
	h.PidMax = pidMaxLimit
	if n, err := strconv.ParseInt(firstLine("/proc/sys/kernel/pid_max"), 10, 64); err == nil && n > 0 {
		h.PidMax = n
	}
	if b, err := readFile("/proc/stat"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "btime "); ok {
				if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					// btime is shifted back by this time namespace's
					// boottime offset: put it back, to the real boot.
					if off := bootOffset(); off.err == nil {
						h.BootTime = time.Unix(s, 0).Add(off.d)
					}
				}
			}
		}
	}
	h.Ticks = clockTicks()
	h.Clock = Monotonic
	h.ClockOffset, h.ClockErr = monoOffset()
	return h
}

func firstLine(path string) string {
	b, err := readFile(path)
	if err != nil {
		return ""
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return strings.TrimSpace(string(line))
}

// clockTicks is AT_CLKTCK from the auxiliary vector, which is what
// sysconf(_SC_CLK_TCK) returns, without cgo. It is 100 on almost every
// Linux, and that is the fallback.
var clockTicks = sync.OnceValue(func() int64 {
	const atClktck = 17
	if av, err := unix.Auxv(); err == nil {
		for _, kv := range av {
			if kv[0] == atClktck && kv[1] > 0 {
				return int64(kv[1])
			}
		}
	}
	return 100
})

// startPlausible: a start time (as shown in this time namespace) no later
// than this namespace's CLOCK_BOOTTIME now. A process that started before
// a negative boottime offset would make the boot shows a wrapped value.
func startPlausible(start uint64) bool {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil || ts.Sec < 0 {
		return false
	}
	t := uint64(clockTicks())
	now := uint64(ts.Sec)*t + uint64(ts.Nsec)*t/1e9
	return start <= now
}

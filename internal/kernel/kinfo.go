package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/verdict"
)

// The macOS probe reads struct kinfo_proc from sysctl kern.proc.pid.<pid>.
// Its decoding lives here, free of build tags, so that it runs (and is
// tested, with the bytes in testdata/kinfo) on Linux too; probe_darwin.go
// only makes the calls, and checks at compile time that these offsets are
// those of golang.org/x/sys/unix.KinfoProc.

// The 64-bit layout of struct kinfo_proc (sys/sysctl.h), the same on
// darwin/amd64 and darwin/arm64, little-endian on both.
const (
	kinfoSize      = 648 // sizeof(struct kinfo_proc)
	kinfoStartSec  = 0   // kp_proc.p_starttime.tv_sec, int64
	kinfoStartUsec = 8   // kp_proc.p_starttime.tv_usec, int32
	kinfoStat      = 36  // kp_proc.p_stat, int8
	kinfoPid       = 40  // kp_proc.p_pid, int32
	kinfoComm      = 243 // kp_proc.p_comm, char[MAXCOMLEN+1]
	kinfoCommLen   = 17
	kinfoPpid      = 560 // kp_eproc.e_ppid, int32
	kinfoUid       = 420 // kp_eproc.e_ucred.cr_uid, uint32
)

// The values of p_stat (sys/proc.h).
const (
	sIdl   = 1 // being created by fork
	sRun   = 2 // runnable (macOS reports most sleeping processes as this too)
	sSleep = 3
	sStop  = 4
	sZomb  = 5 // exited, not yet reaped
)

// Kinfo is what lockctl takes from one struct kinfo_proc.
type Kinfo struct {
	Pid  int
	Ppid int
	Uid  uint32
	// Stat is p_stat: 1 idle (forking), 2 running, 3 sleeping, 4 stopped,
	// 5 zombie.
	Stat int8
	// Start is p_starttime, in microseconds since the Unix epoch: set once,
	// at fork, so it names the process for its whole life even when the
	// clock steps later.
	Start uint64
	Comm  string
}

// ParseKinfo decodes one struct kinfo_proc as sysctl kern.proc.pid.<pid>
// returns it on 64-bit macOS. It refuses any other size (a 32-bit or
// changed layout) and any value no kernel would write, rather than guess.
func ParseKinfo(b []byte) (Kinfo, error) {
	if len(b) != kinfoSize {
		return Kinfo{}, fmt.Errorf("kinfo_proc is %d bytes, want %d", len(b), kinfoSize)
	}
	le := binary.LittleEndian
	sec := int64(le.Uint64(b[kinfoStartSec:]))
	usec := int32(le.Uint32(b[kinfoStartUsec:]))
	k := Kinfo{
		Pid:  int(int32(le.Uint32(b[kinfoPid:]))),
		Ppid: int(int32(le.Uint32(b[kinfoPpid:]))),
		Uid:  le.Uint32(b[kinfoUid:]),
		Stat: int8(b[kinfoStat]),
	}
	switch {
	case k.Pid < 0:
		return Kinfo{}, fmt.Errorf("kinfo_proc names pid %d", k.Pid)
	case k.Stat < sIdl || k.Stat > sZomb:
		return Kinfo{}, fmt.Errorf("kinfo_proc of pid %d has state %d", k.Pid, k.Stat)
	case sec <= 0 || usec < 0 || usec >= 1e6:
		return Kinfo{}, fmt.Errorf("kinfo_proc of pid %d has start time %d.%06d", k.Pid, sec, usec)
	case sec >= 1<<33:
		// Past the year 2242: no clock says so, and a time.Duration from
		// the epoch would overflow.
		return Kinfo{}, fmt.Errorf("kinfo_proc of pid %d has start time %d s, too far off", k.Pid, sec)
	}
	k.Start = uint64(sec)*1e6 + uint64(usec)
	comm := b[kinfoComm : kinfoComm+kinfoCommLen]
	if i := strings.IndexByte(string(comm), 0); i >= 0 {
		comm = comm[:i]
	}
	k.Comm = string(comm)
	return k, nil
}

// errNoRecord is what a kern.proc.pid sysctl answers for a pid with no
// process: success, and no bytes.
var errNoRecord = errors.New("no kinfo_proc")

// kinfoProc turns what macOS said about pid into a verdict.Proc. b and sysErr are
// the answer of sysctl kern.proc.pid.<pid>; kill is kill(pid, 0), asked
// after it. It lives here, not in probe_darwin.go, so that its every branch
// is tested on Linux.
//
// The sysctl answer says what the process at pid was when it was asked;
// kill, asked after, says whether one is still there. So:
//   - no record, and kill says ESRCH: absent;
//   - no record, but kill finds one: a process came (or is being made)
//     between the two calls: running, with no start time, so held;
//   - a record, and kill says ESRCH: it has exited and been reaped since;
//   - a record with p_stat SZOMB: a zombie;
//   - a record: running, with its start time. EPERM from kill is alive.
//
// Anything else is a doubt, and doubt is verdict.StateUnknown or running without a
// start time: never absent, never a zombie.
func kinfoProc(pid int, b []byte, sysErr error, kill func() error) verdict.Proc {
	if sysErr != nil {
		return verdict.Proc{State: verdict.StateUnknown, Err: fmt.Errorf("sysctl kern.proc.pid.%d: %w", pid, sysErr)}
	}
	kerr := kill()
	var denied bool
	switch {
	case kerr == nil:
	case errors.Is(kerr, syscall.ESRCH):
		return verdict.Proc{State: verdict.StateAbsent}
	case errors.Is(kerr, syscall.EPERM):
		// It exists; we may not signal it. That is alive, never dead.
		denied = true
	default:
		return verdict.Proc{State: verdict.StateUnknown, Err: fmt.Errorf("kill(%d, 0): %w", pid, kerr)}
	}
	if len(b) == 0 {
		return verdict.Proc{State: verdict.StateRunning, Denied: denied, Err: fmt.Errorf("pid %d exists, but sysctl kern.proc.pid.%d had no record of it: %w", pid, pid, errNoRecord)}
	}
	k, err := ParseKinfo(b)
	if err != nil {
		return verdict.Proc{State: verdict.StateRunning, Denied: denied, Err: fmt.Errorf("pid %d exists, but its record cannot be read: %w", pid, err)}
	}
	if k.Pid != pid {
		return verdict.Proc{State: verdict.StateUnknown, Err: fmt.Errorf("sysctl kern.proc.pid.%d answered for pid %d", pid, k.Pid)}
	}
	// macOS has no time namespaces: every reader is shown the same start.
	p := verdict.Proc{State: verdict.StateRunning, Start: k.Start, HasStart: true, Shown: k.Start, HasShown: true, Comm: k.Comm, Denied: denied}
	if k.Stat == sZomb {
		p.State = verdict.StateZombie
	}
	return p
}

// macStartBase is what a macOS start time counts from: p_starttime is wall
// time, in microseconds since the Unix epoch.
var macStartBase = time.Unix(0, 0)

// macPidMax is PID_MAX in XNU (bsd/sys/proc_internal.h): no macOS process
// has a larger pid, so a record naming one proves nothing.
const macPidMax = 99999

// macHost assembles the verdict.Host of a macOS machine from what its sysctls
// said: the host name, kern.bootsessionuuid, and kern.boottime. macOS has
// no pid namespaces: every record names "-", as the registry tool's scope
// does.
func macHost(name, bootSession string, boot time.Time) verdict.Host {
	h := verdict.Host{
		Name:         name,
		BootID:       strings.TrimSpace(bootSession),
		PidNS:        "-",
		InitialPidNS: true,
		PidMax:       macPidMax,
		BootTime:     boot,
		StartBase:    macStartBase,
		Ticks:        1e6,
		ScopeErr:     verdict.ErrScopeUnsupported,
	}
	return h
}

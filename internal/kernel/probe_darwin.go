//go:build darwin

package kernel

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// probe asks the running macOS kernel about pid: sysctl kern.proc.pid.<pid>
// for the process's state and start time, then kill(pid, 0) for whether it
// is still there (kinfoProc says how the two answers combine). It never
// forks.
func probe(pid int) verdict.Proc {
	var b []byte
	err := retry(func() (err error) {
		b, err = unix.SysctlRaw("kern.proc.pid", pid)
		return err
	})
	return kinfoProc(pid, b, err, func() error { return retry(func() error { return unix.Kill(pid, 0) }) })
}

// Namesakes implements PidSpace: macOS has no pid namespaces, so no
// process has a pid other than the one this reader sees.
func (KernelProbe) Namesakes() (map[int][]verdict.Namesake, error) { return nil, nil }

// NamespaceInUse implements PidSpace. macOS has one pid space, which lockctl
// records as "-"; any other namespace was not written here.
func (KernelProbe) NamespaceInUse(ns string) (bool, error) {
	if ns == "-" {
		return true, nil
	}
	return false, fmt.Errorf("pid namespace %s is not of this Mac", ns)
}

// LocalHost reads the facts of this Mac: its name, kern.bootsessionuuid
// and kern.boottime. A fact it cannot read is left zero, and the verdicts
// that need it stay on the held side.
func LocalHost() verdict.Host {
	name, _ := os.Hostname()
	session, _ := unix.Sysctl("kern.bootsessionuuid")
	var boot time.Time
	if tv, err := unix.SysctlTimeval("kern.boottime"); err == nil && tv.Sec > 0 {
		boot = time.Unix(tv.Sec, int64(tv.Usec)*1000)
	}
	h := macHost(name, session, boot)
	h.Clock = Monotonic // macOS has no time namespaces: no offset
	return h
}

// The offsets ParseKinfo reads must be those of x/sys's KinfoProc, which
// is generated from the macOS headers: each pair of constants below fails
// to compile (a negative uintptr) unless the two sides are equal.
var kp unix.KinfoProc

const (
	_ = unsafe.Sizeof(kp) - kinfoSize
	_ = kinfoSize - unsafe.Sizeof(kp)
	_ = unsafe.Offsetof(kp.Proc.P_starttime) - kinfoStartSec
	_ = kinfoStartSec - unsafe.Offsetof(kp.Proc.P_starttime)
	_ = unsafe.Offsetof(kp.Proc.P_starttime.Usec) - kinfoStartUsec
	_ = kinfoStartUsec - unsafe.Offsetof(kp.Proc.P_starttime.Usec)
	_ = unsafe.Offsetof(kp.Proc.P_stat) - kinfoStat
	_ = kinfoStat - unsafe.Offsetof(kp.Proc.P_stat)
	_ = unsafe.Offsetof(kp.Proc.P_pid) - kinfoPid
	_ = kinfoPid - unsafe.Offsetof(kp.Proc.P_pid)
	_ = unsafe.Offsetof(kp.Proc.P_comm) - kinfoComm
	_ = kinfoComm - unsafe.Offsetof(kp.Proc.P_comm)
	_ = unsafe.Sizeof(kp.Proc.P_comm) - kinfoCommLen
	_ = kinfoCommLen - unsafe.Sizeof(kp.Proc.P_comm)
	_ = unsafe.Offsetof(kp.Eproc) + unsafe.Offsetof(kp.Eproc.Ppid) - kinfoPpid
	_ = kinfoPpid - unsafe.Offsetof(kp.Eproc) - unsafe.Offsetof(kp.Eproc.Ppid)
	_ = unsafe.Offsetof(kp.Eproc) + unsafe.Offsetof(kp.Eproc.Ucred) + unsafe.Offsetof(kp.Eproc.Ucred.Uid) - kinfoUid
	_ = kinfoUid - unsafe.Offsetof(kp.Eproc) - unsafe.Offsetof(kp.Eproc.Ucred) - unsafe.Offsetof(kp.Eproc.Ucred.Uid)
)

// And the widths.
func _() {
	var (
		_ int64  = kp.Proc.P_starttime.Sec
		_ int32  = kp.Proc.P_starttime.Usec
		_ int8   = kp.Proc.P_stat
		_ int32  = kp.Proc.P_pid
		_ int32  = kp.Eproc.Ppid
		_ uint32 = kp.Eproc.Ucred.Uid
	)
}

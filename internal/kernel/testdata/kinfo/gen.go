//go:build ignore

// gen writes records.txtar: struct kinfo_proc records for the macOS probe's
// parser tests, laid out by the type definitions below, which are copied
// from golang.org/x/sys/unix (ztypes_darwin_arm64.go, generated from the
// macOS headers; the amd64 file is identical), with pointers as uintptr.
// The fields are set by name, so the bytes do not depend on the offsets
// the parser reads (internal/kernel/kinfo.go), and probe_darwin.go checks those
// offsets against x/sys at compile time.
//
// These bytes were made here, not captured on a Mac: no Mac was at hand.
//
//	go run ./internal/kernel/testdata/kinfo/gen.go > internal/kernel/testdata/kinfo/records.txtar
package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"unsafe"
)

type Timeval struct {
	Sec  int64
	Usec int32
	_    [4]byte
}
type Eproc struct {
	Paddr   uintptr
	Sess    uintptr
	Pcred   Pcred
	Ucred   Ucred
	Vm      Vmspace
	Ppid    int32
	Pgid    int32
	Jobc    int16
	Tdev    int32
	Tpgid   int32
	Tsess   uintptr
	Wmesg   [8]byte
	Xsize   int32
	Xrssize int16
	Xccount int16
	Xswrss  int16
	Flag    int32
	Login   [12]byte
	Spare   [4]int32
	_       [4]byte
}
type ExternProc struct {
	P_starttime Timeval
	P_vmspace   uintptr
	P_sigacts   uintptr
	P_flag      int32
	P_stat      int8
	P_pid       int32
	P_oppid     int32
	P_dupfd     int32
	User_stack  uintptr
	Exit_thread uintptr
	P_debugger  int32
	Sigwait     int32
	P_estcpu    uint32
	P_cpticks   int32
	P_pctcpu    uint32
	P_wchan     uintptr
	P_wmesg     uintptr
	P_swtime    uint32
	P_slptime   uint32
	P_realtimer Itimerval
	P_rtime     Timeval
	P_uticks    uint64
	P_sticks    uint64
	P_iticks    uint64
	P_traceflag int32
	P_tracep    uintptr
	P_siglist   int32
	P_textvp    uintptr
	P_holdcnt   int32
	P_sigmask   uint32
	P_sigignore uint32
	P_sigcatch  uint32
	P_priority  uint8
	P_usrpri    uint8
	P_nice      int8
	P_comm      [17]byte
	P_pgrp      uintptr
	P_addr      uintptr
	P_xstat     uint16
	P_acflag    uint16
	P_ru        uintptr
}
type Itimerval struct {
	Interval Timeval
	Value    Timeval
}
type KinfoProc struct {
	Proc  ExternProc
	Eproc Eproc
}
type Vmspace struct {
	Dummy  int32
	Dummy2 uintptr
	Dummy3 [5]int32
	Dummy4 [3]uintptr
}
type Pcred struct {
	Pc_lock  [72]int8
	Pc_ucred uintptr
	P_ruid   uint32
	P_svuid  uint32
	P_rgid   uint32
	P_svgid  uint32
	P_refcnt int32
	_        [4]byte
}
type Ucred struct {
	Ref     int32
	Uid     uint32
	Ngroups int16
	Groups  [16]uint32
}

type record struct {
	file, what string
	pid, ppid  int32
	uid        uint32
	stat       int8
	sec        int64
	usec       int32
	comm       string
}

var records = []record{
	{"launchd", "launchd, running (SRUN), root", 1, 0, 0, 2, 1795681443, 512334, "launchd"},
	{"agent", "a user's process, sleeping (SSLEEP)", 4213, 1, 501, 3, 1795690012, 7, "agmsg"},
	{"zombie", "an exited child its parent has not reaped (SZOMB)", 5120, 4213, 501, 5, 1795690100, 999999, "bash"},
	{"forking", "a process being made by fork (SIDL)", 5121, 4213, 501, 1, 1795690101, 0, "bash"},
	{"stopped", "a stopped process (SSTOP)", 612, 1, 501, 4, 1795681500, 250000, "vim"},
	{"longcomm", "a command name of MAXCOMLEN (16) bytes", 731, 1, 501, 2, 1795681600, 1, "com.apple.WebKit"},
}

func main() {
	var out strings.Builder
	out.WriteString("struct kinfo_proc records (64-bit macOS), made by gen.go from the layout of\n")
	out.WriteString("golang.org/x/sys/unix.KinfoProc, not captured on a Mac. One hex file each.\n")
	for _, r := range records {
		var k KinfoProc
		k.Proc.P_starttime = Timeval{Sec: r.sec, Usec: r.usec}
		k.Proc.P_pid = r.pid
		k.Proc.P_stat = r.stat
		k.Proc.P_flag = 0x4004 // P_EXEC | P_LP64
		k.Proc.P_vmspace = 0
		k.Proc.P_priority = 31
		k.Proc.P_usrpri = 31
		copy(k.Proc.P_comm[:], r.comm)
		k.Eproc.Ppid = r.ppid
		k.Eproc.Pgid = r.pid
		k.Eproc.Pcred.P_ruid = r.uid
		k.Eproc.Pcred.P_svuid = r.uid
		k.Eproc.Pcred.P_rgid = 20
		k.Eproc.Ucred.Uid = r.uid
		k.Eproc.Ucred.Ngroups = 1
		k.Eproc.Ucred.Groups[0] = 20
		k.Eproc.Tdev = -1
		b := unsafe.Slice((*byte)(unsafe.Pointer(&k)), unsafe.Sizeof(k))
		fmt.Fprintf(&out, "-- %s.hex --\n# %s: pid %d, ppid %d, uid %d, p_stat %d, start %d.%06d, comm %q\n", r.file, r.what, r.pid, r.ppid, r.uid, r.stat, r.sec, r.usec, r.comm)
		for len(b) > 0 {
			n := min(32, len(b))
			out.WriteString(hex.EncodeToString(b[:n]) + "\n")
			b = b[n:]
		}
	}
	os.Stdout.WriteString(out.String())
}

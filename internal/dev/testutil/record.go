//go:build linux

package testutil

import (
	"fmt"
	"os"
)

// Holder records of the formats lockctl reads, byte for byte as
// docs/formats.md lays them out, each with "x" as the command. They are
// spelled out literally, not made by any lockctl code, so that a test of
// the reader does not take the reader's word for the format.

// RecA is a generation A holder record (the file <lock>.holder) with an
// empty token.
func RecA(pid int, host string) []byte {
	return fmt.Appendf(nil, "token \npid %d\ncommand x\nhost %s\n", pid, host)
}

// TokenB is a generation B token for pid; n makes it unique among the
// tokens of one test.
func TokenB(pid, n int) string { return fmt.Sprintf("%d.%032x.1", pid, n) }

// RecB is a generation B holder record (the file <lock>/holder.<tok>) with
// a scope line and, after it, the lines more (e.g. "break no").
func RecB(tok string, pid int, host, scope string, more ...string) []byte {
	b := fmt.Appendf(nil, "token %s\npid %d\ncommand x\nhost %s\nscope %s\n", tok, pid, host, scope)
	for _, m := range more {
		b = append(b, m+"\n"...)
	}
	return b
}

// PidRec is the record of a pid file: the pid in decimal and a newline.
func PidRec(pid int) []byte { return fmt.Appendf(nil, "%d\n", pid) }

// RecLockctl is lockctl's own record (docs/record-format.md) naming pid, with its
// start time in clock ticks, this boot, a pid namespace and a host.
func RecLockctl(pid int, start uint64, boot, pidNS, host string) []byte {
	return fmt.Appendf(nil, "lockctl-lock 1\ntoken %d.%032x.1\npid %d\nstart %d\nboot %s\npidns %s\nhost %s\ncommand x\nacquired 2026-01-02T03:04:05.000000006Z\n",
		pid, pid, pid, start, boot, pidNS, host)
}

// FileRec is a lock file record that lockctl's --fix claims, of this host:
// Python filelock's SoftFileLock ("<pid>\n<host>\n"), whose producer only
// creates the file (O_EXCL) and removes it. A bare pid file (PidRec) is
// never claimed (scan.InPlace), so tests of a sweep of a lock file use
// this.
func FileRec(pid int) []byte {
	host, _ := os.Hostname()
	return fmt.Appendf(nil, "%d\n%s\n", pid, host)
}

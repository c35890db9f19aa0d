package kernel

import (
	"fmt"
	"strconv"
	"strings"
)

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

// statParent is the parent's pid (field 4) in b, the content of
// /proc/<pid>/stat, or 0 when b is not a stat line ParseStat accepts or
// the field is not a number.
func statParent(b []byte) int {
	if _, _, _, err := ParseStat(b); err != nil {
		return 0
	}
	f, _ := statField(b, 4) // ppid
	ppid, _ := strconv.Atoi(f)
	return ppid
}

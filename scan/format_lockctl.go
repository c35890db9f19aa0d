package scan

import (
	"strconv"
	"strings"
	"time"
)

// FormatLockctl is lockctl's own: a directory with a fenced record inside.
const FormatLockctl Format = "lockctl"

// lockctl's own lock: a directory holding one fenced record, holder
// (docs/record-format.md).
var formatLockctl = FormatSpec{
	Name:     "lockctl",
	Formats:  []Format{FormatLockctl},
	Room:     "format_lockctl.go",
	Names:    []string{"*.lock"},
	Parse:    ParseLockctl,
	Fuzz:     []string{"scan:FuzzParseLockctl"},
	Rule:     "Held while the pid runs with the recorded start time, in the recorded boot and pid namespace (or any also process does); a reservation until its deadline.",
	Remedy:   "gone: remove the record, then rmdir the directory (lockctl release, or doctor --fix).",
	Source:   "docs/record-format.md; lock/lock.go, Acquire",
	Verdicts: []string{"live", "gone"},
	DirRecord: &DirRecord{
		Inside:       func(*Holder) string { return "holder" },
		TokenInClaim: true,
	},
}

// LockctlMagic is the first line of lockctl's own record, with its version.
const LockctlMagic = "lockctl-lock 1"

// ReserveMagic is the first line of a reservation (lockctl reserve): a
// record whose pid, the reserver, need not live, and which is held until
// its deadline. A reader of version 1 only reads it as malformed, so
// owner-less, and never as gone once the reserver exits.
const ReserveMagic = "lockctl-lock 2"

// ParseLockctl parses lockctl's own holder record (docs/record-format.md): the
// versioned first line, then token, pid, start, boot, pidns, host, command
// and acquired, in that order, then zero or more "also <pid> <start>" lines.
// The token is <pid>.<32 lowercase hex>.<n> and its pid must be the record's.
func ParseLockctl(b []byte) (*Holder, error) {
	const f = FormatLockctl
	ls, err := lines(f, b)
	if err != nil {
		return nil, err
	}
	if len(ls) < 9 {
		return nil, malformed(f, "%d lines, want at least 9", len(ls))
	}
	reserved := ls[0] == ReserveMagic
	if ls[0] != LockctlMagic && !reserved {
		return nil, malformed(f, "the first line is not %q", LockctlMagic)
	}
	keys := []string{"token", "pid", "start", "boot", "pidns", "host", "command", "acquired"}
	v := make([]string, len(keys))
	for i, key := range keys {
		if v[i], err = field(f, ls[i+1], key, i+2); err != nil {
			return nil, err
		}
	}
	h := Holder{Token: v[0], PidText: v[1], BootID: v[3], PidNS: v[4], Host: v[5], Command: v[6]}
	var ok bool
	if h.Pid, ok = parsePid(h.PidText); !ok {
		return nil, malformed(f, "the pid is not a number")
	}
	if tpid, ok := ParseBToken(h.Token); !ok || tpid != h.Pid || strings.SplitN(h.Token, ".", 2)[0] != h.PidText {
		return nil, malformed(f, "the token is not <pid>.<hex>.<n> for the record's pid")
	}
	if h.Start, err = strconv.ParseUint(v[2], 10, 64); err != nil || !isDigits(v[2]) {
		return nil, malformed(f, "the start time is not a number")
	}
	h.HasStart = true
	if h.BootID == "" || h.PidNS == "" || h.Host == "" {
		return nil, malformed(f, "boot, pidns and host must not be empty")
	}
	if h.Since, err = time.Parse(time.RFC3339Nano, v[7]); err != nil {
		return nil, malformed(f, "the acquired time is not RFC 3339")
	}
	rest := ls[9:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "root ") {
		// A keyed lock (--root): the repository root it occupies.
		h.Root = strings.TrimPrefix(rest[0], "root ")
		if !strings.HasPrefix(h.Root, "/") {
			return nil, malformed(f, "line 10: the root is not an absolute path")
		}
		rest = rest[1:]
	}
	if len(rest) > 0 && strings.HasPrefix(rest[0], "slots ") {
		// A slot of a counting lock (--slots): how many slots it has.
		n, err := strconv.Atoi(strings.TrimPrefix(rest[0], "slots "))
		if err != nil || n < 2 || n > 1<<16 || !isDigits(strings.TrimPrefix(rest[0], "slots ")) {
			return nil, malformed(f, "line %d: the number of slots is not a number from 2", len(ls)-len(rest)+1)
		}
		h.Slots = n
		rest = rest[1:]
	}
	if reserved {
		return parseReservation(f, &h, rest, len(ls)-len(rest)+1)
	}
	first := len(ls) - len(rest) + 1 // the line number of rest[0]
	for i, l := range rest {
		rest, ok := strings.CutPrefix(l, "also ")
		pid, start, ok2 := strings.Cut(rest, " ")
		p, ok3 := parsePid(pid)
		st, err := strconv.ParseUint(start, 10, 64)
		if !ok || !ok2 || !ok3 || err != nil || !isDigits(start) {
			return nil, malformed(f, "line %d is not \"also <pid> <start>\"", first+i)
		}
		h.Also = append(h.Also, Identity{Pid: p, Start: st})
	}
	return &h, nil
}

// parseReservation reads the two lines that end a reservation:
// "reserved-until <ns>" (CLOCK_MONOTONIC of this boot, as the host's own
// time namespace counts it) and "timens <ns>" (the writer's time
// namespace's monotonic offset).
func parseReservation(f Format, h *Holder, ls []string, first int) (*Holder, error) {
	if len(ls) != 2 {
		return nil, malformed(f, "a reservation ends with reserved-until and timens lines, and has %d lines after those before them", len(ls))
	}
	until, err := field(f, ls[0], "reserved-until", first)
	if err != nil {
		return nil, err
	}
	off, err := field(f, ls[1], "timens", first+1)
	if err != nil {
		return nil, err
	}
	u, err := strconv.ParseInt(until, 10, 64)
	if err != nil || !isDigits(until) {
		return nil, malformed(f, "reserved-until is not a number of nanoseconds")
	}
	o, err := strconv.ParseInt(off, 10, 64)
	if err != nil || !isDigits(strings.TrimPrefix(off, "-")) {
		return nil, malformed(f, "timens is not a number of nanoseconds")
	}
	h.Reserved, h.Until, h.TimeNS = true, time.Duration(u), time.Duration(o)
	return h, nil
}

// isLockctlRecord says the side file's record r is lockctl's own.
func isLockctlRecord(r Record) bool { return r.Format() == FormatLockctl }

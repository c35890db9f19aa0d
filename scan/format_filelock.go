package scan

import (
	"bytes"
	"fmt"
	"math/big"
	"strings"
)

// ProducerFilelock is Python's filelock, whose SoftFileLock records its
// holder in the lock file.
const ProducerFilelock = "filelock"

// FormatFilelock is Python filelock's SoftFileLock record.
const FormatFilelock Format = "filelock" // Python filelock's SoftFileLock: pid, host[, start token]

var formatFilelock = FormatSpec{
	Name:     "filelock",
	Formats:  []Format{FormatFilelock},
	Producer: ProducerFilelock,
	Room:     "format_filelock.go",
	// Its lock files are named by their user, as *.lock mostly.
	Names:    []string{"*.lock"},
	Parse:    ParseFilelock,
	Fuzz:     []string{"scan:FuzzParseFilelock"},
	Rule:     "filelock breaks a SoftFileLock only when the host is its own and the pid is gone, or runs with another start token (a recycled pid).",
	Remedy:   "gone: remove the file; filelock takes it again by itself.",
	Source:   "tox-dev/filelock src/filelock/_soft.py, _write_lock_info, owner_is_stale; _identity.py",
	Verdicts: []string{"live", "gone", "foreign"},
	claims: func(l *Lock, r *Record) bool {
		return r.Holder == nil && l.Format == FormatUnrecognized && looksLikeFilelock(r.Raw)
	},
	read: func(l *Lock, r *Record) {
		if h, err := ParseFilelock(r.Raw); err == nil {
			l.Format, l.Producer = FormatFilelock, ProducerFilelock
			r.Holder, r.Err = h, nil
		}
	},
}

// looksLikeFilelock: two or three lines, the first a pid.
func looksLikeFilelock(b []byte) bool {
	n := bytes.Count(b, []byte("\n"))
	first, _, _ := strings.Cut(string(b), "\n")
	return (n == 2 || n == 3) && isDigits(first) && first != ""
}

// ParseFilelock parses the lock file of Python's filelock SoftFileLock
// (tox-dev/filelock, src/filelock/_soft.py, _write_lock_info, and
// _identity.py): "<pid>\n<host>\n", and in versions that fence the pid,
// "<start token>\n" after: on Linux (boot id as a 128-bit integer << 64) |
// field 22 of /proc/<pid>/stat, on macOS the start time in microseconds.
// filelock breaks it only when the host is its own and the pid is gone, or
// runs with another start token (a recycled pid): the same fence as
// lockctl's own, so the token becomes the record's boot id and start time,
// a raw one (RawStart): filelock does not take its time namespace's
// boottime offset off.
func ParseFilelock(b []byte) (*Holder, error) {
	const f = FormatFilelock
	s := string(b)
	if !strings.HasSuffix(s, "\n") {
		return nil, malformed(f, "no final newline")
	}
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(ls) != 2 && len(ls) != 3 {
		return nil, malformed(f, "%d lines, want 2 or 3", len(ls))
	}
	pid, ok := parsePid(ls[0])
	if !ok || !isDigits(ls[0]) || pid <= 0 {
		return nil, malformed(f, "line 1 is not a pid")
	}
	if ls[1] == "" || strings.ContainsAny(ls[1], " \t\x00") {
		return nil, malformed(f, "line 2 is not a host name")
	}
	h := &Holder{Pid: pid, PidText: ls[0], Host: ls[1], Command: "python"}
	if len(ls) == 3 {
		tok, ok := new(big.Int).SetString(ls[2], 10)
		if !ok || tok.Sign() < 0 || !isDigits(ls[2]) || tok.BitLen() > 192 {
			return nil, malformed(f, "line 3 is not a start token")
		}
		low := new(big.Int).And(tok, new(big.Int).SetUint64(^uint64(0)))
		// Field 22 as the writer read it: in its own time namespace's
		// clock, offset and all.
		h.Start, h.HasStart, h.RawStart = low.Uint64(), true, true
		if boot := new(big.Int).Rsh(tok, 64); boot.Sign() > 0 {
			x := fmt.Sprintf("%032x", boot)
			h.BootID = x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
		}
	}
	return h, nil
}

package scan

import (
	"strconv"
	"strings"
)

// ProducerXorg is the X server (Xorg, Xvfb, Xephyr, Xwayland, Xvnc...),
// whose /tmp/.X<display>-lock says which server has the display.
const ProducerXorg = "xorg"

// FormatXorg is the X server's display lock: the pid as "%10lu\n".
const FormatXorg Format = "xorg" // /tmp/.X<n>-lock: "%10lu\n"

var formatXorg = FormatSpec{
	Name:       "xorg",
	Formats:    []Format{FormatXorg},
	Producer:   ProducerXorg,
	Room:       "format_xorg.go",
	KnownNames: []string{".X*-lock"},
	Parse:      func(b []byte) (*Holder, error) { return ParseXorg(b) },
	Fuzz:       []string{"scan:FuzzParseProducerRecord", "scan:FuzzTempNames"},
	Rule:       "an X server takes a display lock whose pid kill(pid, 0) answers ESRCH for stale and removes it; one whose pid runs (or answers EPERM) means \"Server is already active for display\". No host is recorded: it is this host's.",
	Remedy:     "gone: remove the file; the X server takes it again when it starts (and would have removed it itself).",
	Source:     "xorg-server os/utils.c, LockServer",
	Verdicts:   []string{"live", "gone"},
	// LockServer writes the record into ".tX<n>-lock", links it to
	// .X<n>-lock and unlinks it: one remains only of a server killed in
	// between (LockServer itself removes one it cannot create for six
	// seconds, whoever made it).
	TempPrefixes: []string{".tX"},
	temp:         xorgTemp,
	// The bytes are the UUCP layout; the name says whose.
	claims: func(l *Lock, r *Record) bool {
		return isXorgLockName(l.Name) && (l.Format == FormatUUCP || l.Format == FormatPid)
	},
	read: func(l *Lock, r *Record) {
		if h, err := ParseXorg(r.Raw); err == nil {
			l.Format, l.Producer = FormatXorg, ProducerXorg
			r.Holder, r.Err = h, nil
		}
	},
}

// isXorgLockName: ".X<display number>-lock" (LOCK_PREFIX, the display,
// LOCK_SUFFIX in os/utils.c); ".tX<n>-lock" is the server's temporary
// file, linked into place, never a lock.
func isXorgLockName(name string) bool {
	n, ok := strings.CutPrefix(name, ".X")
	if !ok {
		return false
	}
	n, ok = strings.CutSuffix(n, "-lock")
	return ok && isDigits(n)
}

// ParseXorg parses an X server's display lock (xorg-server os/utils.c,
// LockServer): snprintf("%10lu\n", getpid()), eleven bytes, written into
// .tX<n>-lock and linked to .X<n>-lock. LockServer reads exactly eleven
// bytes back (fewer is a "bogus lock file" it removes itself; lockctl,
// which removes nothing it cannot read, leaves such a file owner-less).
func ParseXorg(b []byte) (*Holder, error) {
	const f = FormatXorg
	if len(b) != 11 || b[10] != '\n' {
		return nil, malformed(f, "not a pid in ten columns and a newline")
	}
	s := strings.TrimLeft(string(b[:10]), " ")
	if !isDigits(s) || s[0] == '0' {
		return nil, malformed(f, "not a pid in ten columns")
	}
	pid, err := strconv.ParseInt(s, 10, 64)
	if err != nil || pid <= 0 || pid > 1<<31-1 {
		return nil, malformed(f, "the pid is out of range")
	}
	return &Holder{Pid: pid, PidText: s, Command: "X"}, nil
}

// xorgTemp: the X server's temporary (xorg-server os/utils.c, LockServer:
// LOCK_TMP_PREFIX ".tX", the display, LOCK_SUFFIX "-lock") for the lock
// .X<n>-lock, holding the same record ("%10lu\n"); its name carries no
// pid, its bytes do.
func xorgTemp(name string, raw []byte) (string, int64, string, bool) {
	n, ok := strings.CutPrefix(name, ".tX")
	if !ok {
		return "", 0, "", false
	}
	lock := ".X" + n
	if !isXorgLockName(lock) {
		return "", 0, "", false
	}
	h, err := ParseXorg(raw)
	if err != nil {
		return "", 0, "", false
	}
	return lock, h.Pid, "", true
}

package scan

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxRecord is the most bytes lockctl reads of any record. Real records are
// well under 512 bytes; a larger file is reported as malformed, never read
// whole, however large or sparse it is.
const MaxRecord = 4096

// FormatError says why bytes are not a usable record of a format. Its text
// never quotes the record's content, which may be binary or hostile.
type FormatError struct {
	Format Format
	Reason string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("malformed %s record: %s", e.Format, e.Reason)
}

func malformed(f Format, format string, args ...any) error {
	return &FormatError{Format: f, Reason: fmt.Sprintf(format, args...)}
}

// parsePid reads a decimal pid, optionally negative. ok is false for anything
// that is not a number. A number too large for int64 is clamped to
// MaxInt64: it is out of range either way.
func parsePid(s string) (pid int64, ok bool) {
	digits := strings.TrimPrefix(s, "-")
	if !isDigits(digits) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil { // overflow: the syntax was checked above
		if strings.HasPrefix(s, "-") {
			return math.MinInt64, true
		}
		return math.MaxInt64, true
	}
	return n, true
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// lines splits a record into lines. Every line must end in "\n": a record
// without its final newline may have been cut short mid-write ("pid 12" of
// "pid 1234"), and a truncated pid names the wrong process.
func lines(f Format, b []byte) ([]string, error) {
	if len(b) == 0 {
		return nil, malformed(f, "the record is empty")
	}
	if b[len(b)-1] != '\n' {
		return nil, malformed(f, "the last line has no newline (the write may have been cut short)")
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, malformed(f, "the record contains a NUL byte")
	}
	return strings.Split(string(b[:len(b)-1]), "\n"), nil
}

func field(f Format, line, key string, n int) (string, error) {
	v, ok := strings.CutPrefix(line, key+" ")
	if !ok {
		return "", malformed(f, "line %d is not %q", n, key+" ...")
	}
	return v, nil
}

// parseClaimed reads the record a side file holds. token, when known from
// the side file's name, selects generation B. The content decides otherwise.
func parseClaimed(b []byte, token string) (*Holder, error) {
	if bytes.HasPrefix(b, []byte(LockctlMagic+"\n")) || bytes.HasPrefix(b, []byte(ReserveMagic+"\n")) {
		return ParseLockctl(b)
	}
	if bytes.HasPrefix(b, []byte("token ")) {
		if token != "" {
			return ParseRegistryB(b, token)
		}
		if h, err := ParseRegistryA(b); err == nil {
			return h, nil
		}
		return ParseRegistryB(b, "")
	}
	f, h, err := ParsePidFile(b)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, malformed(f, "the claimed record names no owner")
	}
	return h, nil
}

// linkPid reads the pid of a link lock's target: decimal digits, above 0.
func linkPid(s string) (int64, bool) {
	p, ok := parsePid(s)
	return p, ok && isDigits(s) && p > 0
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func isIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 || !isDigits(p) || len(p) > 3 {
			return false
		}
	}
	return true
}

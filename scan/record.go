package scan

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
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

// registryHolder reads the four lines both registry generations begin
// with: token, pid, command and host, in that order.
func registryHolder(f Format, ls []string) (Holder, error) {
	var h Holder
	vals := make([]string, 4)
	for i, key := range []string{"token", "pid", "command", "host"} {
		var err error
		if vals[i], err = field(f, ls[i], key, i+1); err != nil {
			return h, err
		}
	}
	h.Token, h.PidText, h.Command, h.Host = vals[0], vals[1], vals[2], vals[3]
	var ok bool
	if h.Pid, ok = parsePid(h.PidText); !ok {
		return h, malformed(f, "the pid is not a number")
	}
	return h, nil
}

// ParseRegistryA parses a generation A holder record: exactly the four lines
// token, pid, command and host, in that order. The token, when not empty,
// is <host>.<pid>.<epoch-seconds>.<32 lowercase hex>, and its host and pid
// must agree with the record's.
func ParseRegistryA(b []byte) (*Holder, error) {
	const f = FormatRegistryA
	ls, err := lines(f, b)
	if err != nil {
		return nil, err
	}
	if len(ls) != 4 {
		return nil, malformed(f, "%d lines, want 4 (token, pid, command, host)", len(ls))
	}
	h, err := registryHolder(f, ls)
	if err != nil {
		return nil, err
	}
	if h.Host == "" {
		return nil, malformed(f, "the host is empty")
	}
	if h.Token != "" {
		// <host>.<pid>.<epoch>.<hex>: the host may itself contain dots, so
		// take the fixed fields from the right.
		parts := strings.Split(h.Token, ".")
		if len(parts) < 4 {
			return nil, malformed(f, "the token is not <host>.<pid>.<epoch>.<hex>")
		}
		n := len(parts)
		host, pid, epoch, hex := strings.Join(parts[:n-3], "."), parts[n-3], parts[n-2], parts[n-1]
		if !isLowerHex(hex, 32) || !isDigits(epoch) || !isDigits(pid) {
			return nil, malformed(f, "the token is not <host>.<pid>.<epoch>.<hex>")
		}
		if pid != h.PidText || host != h.Host {
			return nil, malformed(f, "the token names another host or pid than the record")
		}
		if sec, err := strconv.ParseInt(epoch, 10, 64); err == nil && sec > 0 {
			h.Since = time.Unix(sec, 0)
		}
	}
	return &h, nil
}

// ParseBToken checks a generation B token, <pid>.<32 lowercase hex>.<attempt>,
// and returns its pid.
func ParseBToken(tok string) (int64, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || !isDigits(parts[0]) || !isLowerHex(parts[1], 32) || !isDigits(parts[2]) {
		return 0, false
	}
	pid, ok := parsePid(parts[0])
	return pid, ok
}

// ParseRegistryB parses a generation B holder record: token, pid, command,
// host, then optionally scope and optionally break, in that order, each at
// most once. nameToken is the token taken from the file name (holder.<token>,
// <lock>.pub.<token>, ...); the record's token must equal it. An empty
// nameToken skips that check (a claim whose name does not carry the token).
func ParseRegistryB(b []byte, nameToken string) (*Holder, error) {
	const f = FormatRegistryB
	ls, err := lines(f, b)
	if err != nil {
		return nil, err
	}
	if len(ls) < 4 || len(ls) > 6 {
		return nil, malformed(f, "%d lines, want 4 to 6", len(ls))
	}
	h, err := registryHolder(f, ls)
	if err != nil {
		return nil, err
	}
	tpid, ok := ParseBToken(h.Token)
	if !ok {
		return nil, malformed(f, "the token is not <pid>.<hex>.<attempt>")
	}
	// Compare the digits, not the numbers: two pids too large for int64
	// both clamp to MaxInt64 and would compare equal.
	if tpid != h.Pid || strings.TrimLeft(strings.SplitN(h.Token, ".", 2)[0], "0") != strings.TrimLeft(h.PidText, "0") {
		return nil, malformed(f, "the token names another pid than the record")
	}
	if nameToken != "" && nameToken != h.Token {
		return nil, malformed(f, "the token differs from the one in the file name")
	}
	if h.Host == "" {
		return nil, malformed(f, "the host is empty")
	}
	rest := ls[4:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "scope ") {
		h.Scope = strings.TrimPrefix(rest[0], "scope ")
		if !isLowerHex(h.Scope, 64) {
			return nil, malformed(f, "the scope is not 64 lowercase hex digits")
		}
		rest = rest[1:]
	}
	if len(rest) > 0 && strings.HasPrefix(rest[0], "break ") {
		h.Break = strings.TrimPrefix(rest[0], "break ")
		if h.Break != "no" && h.Break != "writers" {
			return nil, malformed(f, "break is neither \"no\" nor \"writers\"")
		}
		rest = rest[1:]
	}
	if len(rest) > 0 {
		return nil, malformed(f, "unexpected or duplicate line %d", len(ls)-len(rest)+1)
	}
	return &h, nil
}

// ParsePidFile reads a lock file whose content is its owner: a bare pid
// ("4213\n", with or without the newline), a UUCP pid right-aligned with
// spaces ("      4213\n"), key=value lines with a pid key, or "0" (no owner).
// It returns the format it recognised. Holder is nil for FormatEmpty and
// FormatNoPid (no owner, not an error) and for FormatUnrecognized (with the
// error saying why).
func ParsePidFile(b []byte) (Format, *Holder, error) {
	if len(b) == 0 {
		return FormatEmpty, nil, nil
	}
	if string(b) == KernelRecord {
		return FormatKernel, nil, nil
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return FormatUnrecognized, nil, malformed(FormatUnrecognized, "the content is binary")
	}
	s := string(b)
	body := strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
	trimmed := strings.TrimLeft(body, " ")
	if !strings.Contains(body, "\n") && !strings.Contains(body, "=") {
		if pid, ok := parsePid(trimmed); ok {
			f := FormatPid
			if trimmed != body {
				f = FormatUUCP
			}
			if pid == 0 && trimmed == strings.Repeat("0", len(trimmed)) {
				return FormatNoPid, nil, nil
			}
			return f, &Holder{Pid: pid, PidText: trimmed}, nil
		}
		return FormatUnrecognized, nil, malformed(FormatUnrecognized, "the content is not a pid")
	}
	return parseKeyValue(body)
}

func parseKeyValue(body string) (Format, *Holder, error) {
	const f = FormatKeyValue
	var h Holder
	seen := map[string]bool{}
	for i, line := range strings.Split(body, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return FormatUnrecognized, nil, malformed(FormatUnrecognized, "line %d is neither a pid nor key=value", i+1)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if seen[k] {
			return f, nil, malformed(f, "line %d repeats a key", i+1)
		}
		seen[k] = true
		switch k {
		case "pid":
			h.PidText = v
		case "host", "hostname":
			h.Host = v
		case "command", "cmd", "comm", "name":
			h.Command = v
		}
	}
	if !seen["pid"] {
		return FormatUnrecognized, nil, malformed(FormatUnrecognized, "no pid= line")
	}
	pid, ok := parsePid(h.PidText)
	if !ok {
		return f, nil, malformed(f, "the pid is not a number")
	}
	if pid == 0 {
		return FormatNoPid, nil, nil
	}
	h.Pid = pid
	return f, &h, nil
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

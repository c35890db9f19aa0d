package scan

import (
	"strconv"
	"strings"
	"time"
)

// The registry generations: a lock directory whose holder record is the
// sibling <lock>.holder (generation A) or holder.<token> inside it
// (generation B). The walk reads them (readDir, readDirBeside); these are
// their parsers.
var formatRegistryA = FormatSpec{
	Name:     "registry-a",
	Formats:  []Format{FormatRegistryA},
	Room:     "format_registry.go",
	Names:    []string{"*.lock"},
	Parse:    ParseRegistryA,
	Fuzz:     []string{"scan:FuzzParseRegistryA"},
	Rule:     "The directory is held while the host and pid of <lock>.holder run; a holder older than its directory was left by an earlier lock.",
	Remedy:   "gone: remove the holder, then rmdir the directory.",
	Source:   "docs/formats.md, registry-a (the agmsg registry's shell helpers)",
	Verdicts: []string{"live", "gone", "ownerless", "foreign"},
	// Its holder sits beside the directory, so one left by an earlier
	// lock can sit beside a directory made since by someone else.
	DirRecord:           &DirRecord{Beside: ".holder"},
	StaleIfOlderThanDir: true,
}

var formatRegistryB = FormatSpec{
	Name:     "registry-b",
	Formats:  []Format{FormatRegistryB},
	Room:     "format_registry.go",
	Names:    []string{"*.lock"},
	Parse:    func(b []byte) (*Holder, error) { return ParseRegistryB(b, "") },
	Fuzz:     []string{"scan:FuzzParseRegistryB"},
	Rule:     "The directory is held while the pid of holder.<token> runs in the scope (machine, boot, pid namespace) it records, or a writer inside it runs.",
	Remedy:   "gone: remove the holder record, then rmdir the directory; break no keeps it.",
	Source:   "docs/formats.md, registry-b",
	Verdicts: []string{"live", "gone", "foreign"},
	DirRecord: &DirRecord{
		Inside:       func(h *Holder) string { return "holder." + h.Token },
		TokenInClaim: true,
	},
	// A writer that could not tell where it was records no scope.
	UnscopedMayBeElsewhere: true,
	EvidenceOnly:           "there is no holder record inside the lock directory, only writer evidence of holders that are gone",
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

package scan

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
)

// The registry generations' Formats.
const (
	FormatRegistryA Format = "registry-a" // dir + sibling <lock>.holder
	FormatRegistryB Format = "registry-b" // dir with holder.<token> inside
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

// The registry generations' reading, for the walk (read.go): generation
// B's records and writer evidence inside the lock directory (and
// lockctl's own record there, format_lockctl.go), generation A's beside
// it.

// readInside reads what the lock directory in holds, whose entries
// are ents: lockctl's record, generation B records and writer evidence, and
// anything else, which is counted as other. It reports whether lockctl's own
// record is among them.
func readInside(in fsx.Dir, l *Lock, ents []fsx.Entry) (lockctl bool) {
	for _, e := range ents {
		switch {
		case e.Name == "holder":
			// lockctl's own record.
			r := readRecord(in, e.Name, l.Name+"/"+e.Name)
			if r.Err == nil {
				r.Holder, r.Err = ParseLockctl(r.Raw)
			}
			l.Holders = append(l.Holders, r)
			lockctl = true
		case strings.HasPrefix(e.Name, "holder."):
			tok := strings.TrimPrefix(e.Name, "holder.")
			r := Record{File: l.Name + "/" + e.Name}
			if len(l.Holders) < maxSideFiles {
				r = readRecord(in, e.Name, l.Name+"/"+e.Name)
			} else {
				r.Err = fmt.Errorf("not read: more than %d holder records", maxSideFiles)
			}
			switch {
			case r.Err == nil && tok == "":
				r.Err = malformed(FormatRegistryB, "the file name carries no token")
			case r.Err == nil:
				r.Holder, r.Err = ParseRegistryB(r.Raw, tok)
			}
			l.Holders = append(l.Holders, r)
		case strings.HasPrefix(e.Name, "writer."):
			wr := Writer{Name: e.Name}
			parts := strings.Split(strings.TrimPrefix(e.Name, "writer."), ".")
			if len(parts) == 4 {
				wr.Token = strings.Join(parts[:3], ".")
				if isDigits(parts[3]) {
					wr.Pid, _ = parsePid(parts[3])
				}
			}
			l.Writers = append(l.Writers, wr)
		case strings.HasPrefix(e.Name, "pending."):
			l.Pending = append(l.Pending, e.Name)
		default:
			if len(l.Others) < maxOthers {
				l.Others = append(l.Others, e.Name)
			}
		}
	}
	return lockctl
}

// dirLayout names the layout of a lock directory whose entries readInside
// read, and says whether it was one: lockctl's own when its record is the
// only one and no writer works in it, else generation B when any record or
// writer evidence is inside.
func dirLayout(l *Lock, lockctl bool) bool {
	switch {
	case lockctl && len(l.Holders) == 1 && len(l.Writers)+len(l.Pending) == 0:
		l.Format = FormatLockctl
	case len(l.Holders) > 0, len(l.Writers) > 0 || len(l.Pending) > 0:
		l.Format = FormatRegistryB
	default:
		return false
	}
	return true
}

// readHolderBeside reads generation A's holder record, the sibling
// <lock>.holder among sides, as the record of the lock directory l, and
// returns the side files left; ok is false when there is none.
func readHolderBeside(d fsx.Dir, l *Lock, sides []side) (rest []side, ok bool) {
	for i, s := range sides {
		if s.kind == ClaimHolder {
			r := readRecord(d, s.name, s.name)
			if r.Err == nil {
				r.Holder, r.Err = ParseRegistryA(r.Raw)
			}
			l.Holders = []Record{r}
			l.Format = FormatRegistryA
			return append(sides[:i:i], sides[i+1:]...), true
		}
	}
	return sides, false
}

// Format guesses which layout a parsed side-file record came from.
func (r Record) Format() Format {
	switch {
	case r.Holder == nil:
		return FormatUnrecognized
	case strings.HasPrefix(string(r.Raw), LockctlMagic+"\n") || r.Holder.Reserved:
		return FormatLockctl
	case strings.HasPrefix(string(r.Raw), "token "):
		if _, ok := ParseBToken(r.Holder.Token); ok {
			return FormatRegistryB
		}
		return FormatRegistryA
	}
	f, _, _ := ParsePidFile(r.Raw)
	return f
}

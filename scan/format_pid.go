package scan

import (
	"bytes"
	"strings"
)

// The pid file family's Formats (and the shapes of scan/lock.go).
const (
	FormatPid      Format = "pid"    // "<pid>\n"
	FormatUUCP     Format = "uucp"   // "%10d\n"
	FormatKeyValue Format = "pid-kv" // "pid=<pid>\n" and other key=value lines
)

// The pid file family: the lock file is the lock, and its bytes name its
// owner, as dotlockfile -p, lockfile-create --use-pid, HDB UUCP and most
// libraries write it (docs/formats.md, "pid, uucp, pid-kv, no-pid,
// empty").
var formatPid = FormatSpec{
	Name:     "pid",
	Formats:  []Format{FormatPid, FormatUUCP, FormatKeyValue, FormatNoPid, FormatEmpty, FormatUnrecognized},
	Room:     "format_pid.go",
	Names:    []string{"*.lock", "*.lck", "LCK..*"},
	Parse:    func(b []byte) (*Holder, error) { _, h, err := ParsePidFile(b); return h, err },
	Fuzz:     []string{"scan:FuzzParsePidFile"},
	Rule:     "The pid written in the file holds the lock while it runs; no host is recorded, so it is this host's. \"0\" or nothing names no owner.",
	Remedy:   "gone: remove the file; no-pid, empty and unreadable content: owner-less, removed only with --legacy-older-than.",
	Source:   "liblockfile dotlockfile(1) -p, lockfile-progs lockfile-create --use-pid, HDB UUCP's LCK..<device>",
	Verdicts: []string{"live", "gone", "recycled", "ownerless", "unknown"},
	inPlace:  bareInPlace,
}

// bareInPlace says a lock file whose record is a bare pid (plain, UUCP or
// pid= lines) and whose producer is not known may be rewritten in place
// by a live process taking the lock (InPlaceRule); docs/fix-protocol.md
// has the table of formats.
func bareInPlace(l *Lock) string {
	if l.Kind != KindFile || l.Producer != "" {
		return ""
	}
	switch l.Format {
	case FormatPid, FormatUUCP, FormatKeyValue:
		return InPlaceRule
	}
	return ""
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

// InPlaceRule is why lockctl never claims a bare pid file of unknown
// producer: the commonest code that takes such a lock takes a stale one by
// writing it again in place, keeping its inode, and a claim can only be
// bound to an inode and the bytes read from it, so a rewrite between the
// last read and the rename would free the name under a live holder.
const InPlaceRule = "lockctl does not remove a bare pid file: its producer is not known, and such files are often taken by writing them again in place ('echo $$ > FILE' in shell and cron code, daemons rewriting their own pid file), which keeps the inode, so no claim can be bound to the holder judged; once nothing that uses it runs, remove it by hand"

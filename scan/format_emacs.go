package scan

import (
	"strconv"
	"strings"
	"time"
)

// ProducerEmacs is Emacs: .#<file> beside the file being edited.
const ProducerEmacs = "emacs"

// FormatEmacs is Emacs's lock, a link to user@host.pid[:boot].
const FormatEmacs Format = "emacs" // .#<file>: link to user@host.pid[:boot]

var formatEmacs = FormatSpec{
	Name:       "emacs",
	Formats:    []Format{FormatEmacs},
	Producer:   ProducerEmacs,
	Room:       "format_emacs.go",
	KnownNames: []string{".#*"},
	Parse:      func(b []byte) (*Holder, error) { return parseEmacs(string(b)) },
	Fuzz:       []string{"scan:FuzzParseLinkLock"},
	Rule:       "Emacs takes a lock of another host for held; of its own, held while the pid runs, unless the boot time it recorded is another boot's (it then takes the lock).",
	Remedy:     "gone: remove the link; a running pid of another boot is recycled, never gone, since Emacs's boot time and the kernel's come from different sources.",
	Source:     "emacs src/filelock.c, lock_file_1, current_lock_owner",
	Verdicts:   []string{"live", "gone", "recycled", "foreign"},
	link:       func(_, name string) bool { return strings.HasPrefix(name, ".#") && len(name) > 2 },
	parseLink:  parseEmacs,
	// Where symbolic links fail, Emacs writes the same bytes into a
	// regular file.
	claims: func(l *Lock, r *Record) bool {
		return r.Holder == nil && strings.HasPrefix(l.Name, ".#") && len(l.Name) > 2
	},
	read: readLinkBytes(ProducerEmacs, parseEmacs),
}

// parseEmacs reads "<user>@<host>.<pid>", then ":<boot time, seconds since
// the epoch>" where Emacs knows the boot time; the host may hold dots, the
// pid is after the last one (src/filelock.c, lock_file_1 and
// current_lock_owner).
func parseEmacs(target string) (*Holder, error) {
	const f = FormatEmacs
	at := strings.LastIndexByte(target, '@')
	dot := strings.LastIndexByte(target, '.')
	if at < 0 || dot < at+2 {
		return nil, malformed(f, "the target is not <user>@<host>.<pid>[:<boot time>]")
	}
	pidText, boot, hasBoot := strings.Cut(target[dot+1:], ":")
	pid, ok := linkPid(pidText)
	if !ok {
		return nil, malformed(f, "the pid %q is not a process id", pidText)
	}
	h := &Holder{Pid: pid, PidText: pidText, User: target[:at], Host: target[at+1 : dot], Command: "emacs"}
	if hasBoot {
		s, err := strconv.ParseInt(boot, 10, 64)
		if err != nil || s < 0 || !isDigits(boot) {
			return nil, malformed(f, "the boot time %q is not a number of seconds", boot)
		}
		h.Booted = time.Unix(s, 0)
	}
	return h, nil
}

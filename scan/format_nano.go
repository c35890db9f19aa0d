package scan

import (
	"bytes"
	"strconv"
	"strings"
)

// ProducerNano is GNU nano run with --locking (or "set locking"), whose
// .<file>.swp says that nano edits <file>.
const ProducerNano = "nano"

// FormatNano is nano's lock file: a vim-like block 0 that says "b0nano".
const FormatNano Format = "nano" // .<file>.swp: "b0nano <version>", pid at 24

var formatNano = FormatSpec{
	Name:       "nano",
	Formats:    []Format{FormatNano},
	Producer:   ProducerNano,
	Room:       "format_nano.go",
	KnownNames: []string{".*.sw[a-p]"},
	Parse:      ParseNano,
	Fuzz:       []string{"scan:FuzzParseProducerRecord"},
	Rule:       "nano takes any lock file for another editor's, names its user, program and pid, and asks whether to open the file anyway; if so it deletes the lock and writes its own. It keeps nothing but the lock in it: unsaved changes are not there.",
	Remedy:     "gone: remove the file, after which nano opens the file without asking; another host's: foreign.",
	Source:     "GNU nano src/files.c, write_lockfile (the layout), do_lockfile (the question), delete_lockfile",
	Verdicts:   []string{"live", "gone", "foreign"},
	// vim's swap file has the same name and the same first two bytes;
	// the program's name after them says whose it is.
	claims: func(l *Lock, r *Record) bool {
		return IsVimSwapName(l.Name) && strings.HasPrefix(string(r.Raw), "b0nano ")
	},
	read: func(l *Lock, r *Record) {
		if h, err := ParseNano(r.Raw); err == nil {
			l.Format, l.Producer = FormatNano, ProducerNano
			r.Holder, r.Err = h, nil
		}
	},
}

// ParseNano reads a nano lock file (GNU nano src/files.c,
// write_lockfile): LOCKSIZE (1024) bytes, 0x62 0x30 ("b0") at 0, "nano
// <version>" at 2, the pid at 24 (4 bytes, lowest first), the user at 28
// (at most 16 bytes), the host at 68 (at most 32, gethostname), the file's
// full path at 108, and at 1007 0x55 when the buffer was modified. Nothing
// else; a lock of fewer bytes is one nano calls bad and ignores.
func ParseNano(b []byte) (*Holder, error) {
	const f = FormatNano
	if len(b) != 1024 || !bytes.HasPrefix(b, []byte("b0nano ")) {
		return nil, malformed(f, "not a nano lock file of 1024 bytes")
	}
	cstr := func(off, n int) string {
		s := b[off : off+n]
		if i := bytes.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		return string(s)
	}
	pid := int64(b[24]) | int64(b[25])<<8 | int64(b[26])<<16 | int64(b[27])<<24
	if pid <= 0 {
		return nil, malformed(f, "no pid at byte 24")
	}
	host := cstr(68, 32)
	if host == "" {
		return nil, malformed(f, "no host name at byte 68")
	}
	return &Holder{Pid: pid, PidText: strconv.FormatInt(pid, 10), User: cstr(28, 16), Host: host, Command: "nano"}, nil
}

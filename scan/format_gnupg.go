package scan

import "strings"

// ProducerGnuPG is GnuPG (gpg, gpg-agent, gpgsm, dirmngr, keyboxd), whose
// dotlock <file>.lock guards a keyring, trust database or key file.
const ProducerGnuPG = "gnupg"

// FormatGnuPG is GnuPG's dotlock record: the pid as "%10d\n", then the
// node name and a newline.
const FormatGnuPG Format = "gnupg" // <file>.lock: "%10d\n<nodename>\n"

var formatGnuPG = FormatSpec{
	Name:     "gnupg",
	Formats:  []Format{FormatGnuPG},
	Producer: ProducerGnuPG,
	Room:     "format_gnupg.go",
	// pubring.kbx.lock, trustdb.gpg.lock, ...: dotlock_create appends
	// ".lock" to the name of the file it locks.
	Names:    []string{"*.lock"},
	Parse:    ParseGnuPG,
	Fuzz:     []string{"scan:FuzzParseProducerRecord", "scan:FuzzTempNames"},
	Rule:     "gpg takes a dotlock whose node name is byte for byte its own and whose pid kill(pid, 0) answers ESRCH for stale and removes it (\"removing stale lockfile\"); one of another node, or whose pid runs (or answers EPERM), it waits on.",
	Remedy:   "gone: remove the file; gpg takes it again by itself (and would have removed it itself).",
	Source:   "gnupg common/dotlock.c, dotlock_create_unix (the record), read_lockfile (same_node), dotlock_take_unix (the stale rule)",
	Verdicts: []string{"live", "gone", "foreign"},
	// dotlock_create_unix writes the record into ".#lk%p.<node>.<pid>"
	// beside the lock and links it to <file>.lock; dotlock_destroy_unix
	// unlinks both. A gpg killed holding the lock leaves both, one inode.
	TempPrefixes: []string{".#lk0x"},
	temp:         gnupgTemp,
	// The bytes are checked before the name: gpg's record is the one that
	// starts with a pid in ten columns and has the node name after it.
	claims: func(l *Lock, r *Record) bool {
		return r.Holder == nil && l.Format == FormatUnrecognized && looksLikeGnuPG(r.Raw)
	},
	read: func(l *Lock, r *Record) {
		if h, err := ParseGnuPG(r.Raw); err == nil {
			l.Format, l.Producer = FormatGnuPG, ProducerGnuPG
			r.Holder, r.Err = h, nil
		}
	},
}

// looksLikeGnuPG: eleven bytes of a right-aligned pid line, then more.
func looksLikeGnuPG(b []byte) bool {
	return len(b) > 12 && b[10] == '\n' && strings.Count(string(b), "\n") == 2
}

// ParseGnuPG parses a GnuPG dotlock (gnupg common/dotlock.c): what
// dotlock_create_unix writes, snprintf("%10d\n", getpid()) (eleven bytes),
// then the node name from uname(2) ("unknown" when uname fails), then
// "\n". read_lockfile takes the pid from the first ten bytes, which must
// be followed by '\n', and the lock for this node's only when the node
// name follows byte for byte; the Holder's Host is that name, exactly.
func ParseGnuPG(b []byte) (*Holder, error) {
	const f = FormatGnuPG
	s := string(b)
	if len(s) < 13 || s[10] != '\n' || !strings.HasSuffix(s, "\n") {
		return nil, malformed(f, "not a ten-column pid line and a node name line")
	}
	pidText := strings.TrimLeft(s[:10], " ")
	node := s[11 : len(s)-1]
	if pidText == "" || !isDigits(pidText) || strings.TrimLeft(pidText, "0") != pidText {
		return nil, malformed(f, "the first line is not a pid in ten columns")
	}
	pid, ok := parsePid(pidText)
	if !ok || pid <= 0 {
		return nil, malformed(f, "the first line is not a pid")
	}
	if node == "" || strings.ContainsAny(node, "\n\x00") {
		return nil, malformed(f, "the second line is not a node name")
	}
	return &Holder{Pid: pid, PidText: pidText, Host: node, Command: "gpg"}, nil
}

// ParseGnuPGTemp parses the name of GnuPG's temporary dotlock file (gnupg
// common/dotlock.c, dotlock_create_unix): snprintf("%.*s/.#lk%p.", dir,
// h) then "%s.%d" of the node name and the pid (the parent's with
// DOTLOCK_LOCK_BY_PARENT, which the record then holds too). %p is glibc's
// "0x" and lower-case hex; the node name may hold dots, so the pid is
// what follows the last one. The name says nothing of the file locked.
func ParseGnuPGTemp(name string) (pid int64, node string, ok bool) {
	rest, ok := strings.CutPrefix(name, ".#lk0x")
	if !ok {
		return 0, "", false
	}
	handle, rest, ok := strings.Cut(rest, ".")
	if !ok || handle == "" || len(handle) > 16 || !isHex(handle, len(handle)) {
		return 0, "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return 0, "", false
	}
	node, pidText := rest[:i], rest[i+1:]
	if !isDigits(pidText) || pidText[0] == '0' {
		return 0, "", false
	}
	pid, ok = parsePid(pidText)
	if !ok || pid <= 0 || pid > 1<<31-1 {
		return 0, "", false
	}
	return pid, node, true
}

// gnupgTemp: a temporary is gpg's when its bytes are the dotlock record
// its name speaks of (the same pid and node name), as dotlock_create_unix
// writes both.
func gnupgTemp(name string, raw []byte) (string, int64, string, bool) {
	pid, node, ok := ParseGnuPGTemp(name)
	if !ok {
		return "", 0, "", false
	}
	h, err := ParseGnuPG(raw)
	if err != nil || h.Pid != pid || h.Host != node {
		return "", 0, "", false
	}
	return "", pid, node, true
}

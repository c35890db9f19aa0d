package scan

import "strings"

// ProducerShadow is shadow's commonio (vipw, vigr, useradd, passwd,
// chpasswd, ...), whose <database>.lock (/etc/passwd.lock, shadow.lock,
// group.lock, gshadow.lock, subuid.lock, subgid.lock) guards the database.
const ProducerShadow = "shadow"

// FormatShadow is shadow's lock record: the pid in decimal and a NUL.
const FormatShadow Format = "shadow" // <database>.lock: "<pid>\0"

var formatShadow = FormatSpec{
	Name:     "shadow",
	Formats:  []Format{FormatShadow},
	Producer: ProducerShadow,
	Room:     "format_shadow.go",
	Names:    []string{"*.lock"},
	Parse:    ParseShadow,
	Fuzz:     []string{"scan:FuzzParseProducerRecord", "scan:FuzzTempNames"},
	Rule:     "shadow takes a lock whose pid kill(pid, 0) finds for held (\"lock ... already used by PID\"); any other it unlinks and takes: no host is recorded, so it is this host's.",
	Remedy:   "gone: remove the file; vipw and the other tools take it again by themselves (and would have removed it themselves).",
	Source:   "shadow lib/commonio.c, do_lock_file, commonio_lock_nowait",
	Verdicts: []string{"live", "gone"},
	// commonio_lock_nowait writes the record into "<database>.<pid>" and
	// do_lock_file links it to <database>.lock, then unlinks it, linked
	// or not: one remains only of a tool killed in between.
	TempPrefixes: shadowDatabases,
	temp:         shadowTemp,
	// ParsePidFile calls the NUL binary: the bytes alone are shadow's.
	claims: func(l *Lock, r *Record) bool {
		return r.Holder == nil && l.Format == FormatUnrecognized && strings.HasSuffix(string(r.Raw), "\x00") && isDigits(strings.TrimSuffix(string(r.Raw), "\x00"))
	},
	read: func(l *Lock, r *Record) {
		if h, err := ParseShadow(r.Raw); err == nil {
			l.Format, l.Producer = FormatShadow, ProducerShadow
			r.Holder, r.Err = h, nil
		}
	},
}

// ParseShadow parses the lock file of shadow's commonio (lib/commonio.c,
// do_lock_file): it writes stprintf("%lu", getpid()) and the terminating
// NUL (strlen + 1 bytes) into <database>.<pid>, then links that to
// <database>.lock; a later locker reads it back with get_pid (a decimal
// from 1 to the largest pid_t). Nothing else is recorded.
func ParseShadow(b []byte) (*Holder, error) {
	const f = FormatShadow
	s, ok := strings.CutSuffix(string(b), "\x00")
	if !ok || !isDigits(s) || s[0] == '0' {
		return nil, malformed(f, "not a decimal pid and a NUL byte")
	}
	pid, ok := parsePid(s)
	if !ok || pid <= 0 || pid > 1<<31-1 {
		return nil, malformed(f, "the pid is out of range")
	}
	return &Holder{Pid: pid, PidText: s, Command: "shadow"}, nil
}

// shadowDatabases are the databases whose locks shadow's tools take
// through commonio (lib/pwio.c, shadowio.c, groupio.c, sgroupio.c,
// subordinateio.c), each as the prefix of its temporary's name.
var shadowDatabases = []string{"passwd.", "shadow.", "group.", "gshadow.", "subuid.", "subgid."}

// ParseShadowTemp parses the name of shadow's temporary lock file (shadow
// lib/commonio.c, commonio_lock_nowait): aprintf("%s.%ju", the database's
// file name, getpid()), linked to "<database>.lock" by do_lock_file. It
// returns the lock's name and the pid.
func ParseShadowTemp(name string) (lock string, pid int64, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || !hasAnyPrefix(name, shadowDatabases) || name[:i+1] != shadowDatabaseOf(name) {
		return "", 0, false
	}
	pidText := name[i+1:]
	if !isDigits(pidText) || pidText[0] == '0' {
		return "", 0, false
	}
	pid, ok = parsePid(pidText)
	if !ok || pid <= 0 || pid > 1<<31-1 {
		return "", 0, false
	}
	return name[:i] + ".lock", pid, true
}

// shadowDatabaseOf is the database prefix name starts with, or "".
func shadowDatabaseOf(name string) string {
	for _, p := range shadowDatabases {
		if strings.HasPrefix(name, p) {
			return p
		}
	}
	return ""
}

// shadowTemp: a temporary is shadow's when its bytes are the record its
// name speaks of ("<pid>\0", the same pid), as do_lock_file writes it.
func shadowTemp(name string, raw []byte) (string, int64, string, bool) {
	lock, pid, ok := ParseShadowTemp(name)
	if !ok {
		return "", 0, "", false
	}
	h, err := ParseShadow(raw)
	if err != nil || h.Pid != pid {
		return "", 0, "", false
	}
	return lock, pid, "", true
}

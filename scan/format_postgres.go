package scan

import (
	"strconv"
	"strings"
	"time"
)

// ProducerPostgres is PostgreSQL: postmaster.pid in a data directory and
// .s.PGSQL.<port>.lock beside its socket.
const ProducerPostgres = "postgresql"

// FormatPostgres is a PostgreSQL lock file.
const FormatPostgres Format = "postgresql" // postmaster.pid, .s.PGSQL.<port>.lock

// Postgres is what a PostgreSQL lock file holds beyond its pid
// (src/backend/utils/init/miscinit.c, CreateLockFile; the line numbers are
// LOCK_FILE_LINE_* in src/include/miscadmin.h).
type Postgres struct {
	// DataDir is line 2: the data directory.
	DataDir string
	// Standalone says line 1 was negative: a standalone backend, not a
	// postmaster.
	Standalone bool
	// ShmKey and ShmID are line 7 of postmaster.pid, the System V shared
	// memory segment of the cluster; HasShm is false when the line is not
	// there (the file is written in several steps) or for the socket lock.
	ShmKey, ShmID uint64
	HasShm        bool
}

var formatPostgres = FormatSpec{
	Name:     "postgresql",
	Formats:  []Format{FormatPostgres},
	Producer: ProducerPostgres,
	Room:     "format_postgres.go",
	// The socket lock, .s.PGSQL.<port>.lock, is found by *.lock.
	Names:    []string{"postmaster.pid", "*.lock"},
	Parse:    func(b []byte) (*Holder, error) { h, _, err := ParsePostgres(b, true); return h, err },
	Fuzz:     []string{"scan:FuzzParsePostgres"},
	Rule:     "PostgreSQL takes the lock for held while its pid runs, and, the postmaster gone, while any process is still attached to the cluster's shared memory (orphan backends).",
	Remedy:   "gone: remove the file; PostgreSQL would also remove it itself when it starts.",
	Source:   "postgres src/backend/utils/init/miscinit.c, CreateLockFile, PGSharedMemoryIsInUse",
	Verdicts: []string{"live", "gone", "unknown"},
	claims: func(l *Lock, _ *Record) bool {
		return l.Name == "postmaster.pid" || isPGSocketLock(l.Name)
	},
	read: func(l *Lock, r *Record) {
		if h, pg, err := ParsePostgres(r.Raw, l.Name == "postmaster.pid"); err == nil {
			l.Format, l.Producer, l.Postgres = FormatPostgres, ProducerPostgres, pg
			r.Holder, r.Err = h, nil
		}
	},
}

// isPGSocketLock reports whether name is a PostgreSQL socket's lock file,
// .s.PGSQL.<port>.lock.
func isPGSocketLock(name string) bool {
	port, ok := strings.CutPrefix(name, ".s.PGSQL.")
	if !ok {
		return false
	}
	if port, ok = strings.CutSuffix(port, ".lock"); !ok || port == "" {
		return false
	}
	_, err := strconv.ParseUint(port, 10, 16)
	return err == nil
}

// ParsePostgres parses a PostgreSQL lock file: the pid on line 1 (negative
// for a standalone backend), the absolute data directory on line 2, the
// start time (seconds since the epoch, the postmaster's own clock when it
// started: not the kernel's start time of the process) on line 3, and in
// postmaster.pid (dataDir) "<key> <id>" of its shared memory on line 7.
// Lines after the second may be missing: the file is written in steps.
func ParsePostgres(b []byte, dataDir bool) (*Holder, *Postgres, error) {
	const f = FormatPostgres
	if len(b) == 0 || !strings.HasSuffix(string(b), "\n") {
		return nil, nil, malformed(f, "no final newline")
	}
	ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(ls) < 2 {
		return nil, nil, malformed(f, "%d lines, want at least 2", len(ls))
	}
	text := strings.TrimPrefix(ls[0], "-")
	pid, ok := parsePid(text)
	if !ok || !isDigits(text) {
		return nil, nil, malformed(f, "line 1 is not a pid")
	}
	if !strings.HasPrefix(ls[1], "/") {
		return nil, nil, malformed(f, "line 2 is not a data directory")
	}
	h := &Holder{Pid: pid, PidText: text, Command: "postgres"}
	pg := &Postgres{DataDir: ls[1], Standalone: ls[0][0] == '-'}
	if len(ls) >= 3 {
		if s, err := strconv.ParseInt(strings.TrimSpace(ls[2]), 10, 64); err == nil && s > 0 {
			h.Since = time.Unix(s, 0)
		}
	}
	if dataDir && len(ls) >= 7 {
		if k, id, ok := strings.Cut(strings.TrimSpace(ls[6]), " "); ok {
			kv, err1 := strconv.ParseUint(strings.TrimSpace(k), 10, 64)
			iv, err2 := strconv.ParseUint(strings.TrimSpace(id), 10, 64)
			if err1 == nil && err2 == nil {
				pg.ShmKey, pg.ShmID, pg.HasShm = kv, iv, true
			}
		}
	}
	return h, pg, nil
}

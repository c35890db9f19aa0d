package scan

import "github.com/lockctl/lockctl/internal/fsx"

// FormatPidDir is the shell's lock directory with the holder's pid in it:
// mkdir app.lock && echo $$ > app.lock/pid.
const FormatPidDir Format = "pid-dir" // <lock>/pid: a directory holding only its holder's pid

// The usual shell lock: mkdir is the atomic test-and-set, and the pid
// file inside names the process that won it. Many scripts write it, so it
// has no producer; its rule is the pid's, and since such scripts as often
// take a stale lock by writing their own pid into the file in place
// ('echo $$ > app.lock/pid' once 'kill -0' fails), --fix never claims it
// (InPlace).
var formatPidDir = FormatSpec{
	Name:     "pid-dir",
	Formats:  []Format{FormatPidDir},
	Room:     "format_piddir.go",
	Names:    []string{"*.lock", "*.lck", "LCK..*"},
	Parse:    func(b []byte) (*Holder, error) { _, h, err := ParsePidFile(b); return h, err },
	Fuzz:     []string{"scan:FuzzParsePidFile"},
	Rule:     "The pid written in <lock>/pid holds the lock while it runs; no host is recorded, so it is this host's.",
	Remedy:   "gone: remove the pid file and the directory by hand once nothing that uses it runs; --fix never does, since such scripts take a stale lock by rewriting the pid file in place.",
	Source:   "the shell idiom mkdir <lock> && echo $$ > <lock>/pid (BashFAQ 045, \"mkdir as a lock\")",
	Verdicts: []string{"live", "gone"},
	inDir:    readPidDir,
	inPlace: func(l *Lock) string {
		if l.Kind == KindDir {
			return InPlaceRule // its pid file: 'echo $$ > app.lock/pid'
		}
		return ""
	},
}

// readPidDir reads a lock directory whose one entry is a regular file
// named pid holding a bare pid (plain or right-aligned, as ParsePidFile
// reads it) as that pid's lock. Anything else in it, or other bytes,
// leaves it as it was: a directory holding entries lockctl does not
// recognise.
func readPidDir(in fsx.Dir, l *Lock, ents []fsx.Entry) bool {
	if len(ents) != 1 || ents[0].Name != "pid" || len(l.Holders) > 0 || len(l.Writers)+len(l.Pending) > 0 {
		return false
	}
	r := readRecord(in, "pid", l.Name+"/pid")
	if r.Err != nil {
		return false
	}
	f, h, err := ParsePidFile(r.Raw)
	if err != nil || h == nil || (f != FormatPid && f != FormatUUCP) {
		return false
	}
	r.Holder = h
	l.Holders, l.Others, l.Format = []Record{r}, nil, FormatPidDir
	return true
}

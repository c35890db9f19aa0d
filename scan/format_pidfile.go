package scan

// A daemon's pid file, <name>.pid (in /run, /var/run, a service's own
// directory): the daemon's pid in decimal, as a bare pid file. Its name
// joins the defaults only for a file whose bytes are a pid (a data file
// that happens to end in .pid is not reported), and it is read as the
// pid family reads it. Daemons rewrite their pid file in place (and
// start-stop-daemon, systemd's PIDFile= and most init scripts read it to
// signal the daemon), so --fix never claims one (InPlace).
var formatPidFile = FormatSpec{
	Name:       "pidfile",
	Formats:    []Format{FormatPid, FormatUUCP, FormatKeyValue},
	Room:       "format_pidfile.go",
	KnownNames: []string{"*.pid"},
	Parse:      func(b []byte) (*Holder, error) { _, h, err := ParsePidFile(b); return h, err },
	Fuzz:       []string{"scan:FuzzParsePidFile"},
	Rule:       "The pid written in the file is the daemon's while it runs; no host is recorded, so it is this host's.",
	Remedy:     "gone: remove it by hand once the service is stopped; --fix never does, since daemons rewrite their pid files in place.",
	Source:     "daemon(7) (\"write the daemon PID ... to a PID file\"), start-stop-daemon(8) --pidfile/--make-pidfile, systemd.service(5) PIDFile=",
	Verdicts:   []string{"live", "gone"},
	keepKnown: func(l *Lock) bool {
		if l.Kind != KindFile || len(l.Holders) != 1 || l.Holders[0].Holder == nil {
			return false
		}
		switch l.Format {
		case FormatPid, FormatUUCP, FormatKeyValue:
			return true
		}
		return false
	},
}

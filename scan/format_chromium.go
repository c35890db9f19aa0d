package scan

// ProducerChromium is Chromium: a profile's SingletonLock.
const ProducerChromium = "chromium"

// FormatChromium is Chromium's SingletonLock, a link to host-pid.
const FormatChromium Format = "chromium" // SingletonLock: link to host-pid

var formatChromium = FormatSpec{
	Name:       "chromium",
	Formats:    []Format{FormatChromium},
	Producer:   ProducerChromium,
	Room:       "format_chromium.go",
	KnownNames: []string{"SingletonLock"},
	Parse:      func(b []byte) (*Holder, error) { return parseChromium(string(b)) },
	Fuzz:       []string{"scan:FuzzParseLinkLock"},
	Rule:       "Chromium takes a SingletonLock of another host for held; of its own, held while the pid runs.",
	Remedy:     "gone: remove the link; Chromium takes it again when it starts.",
	Source:     "chromium chrome/browser/process_singleton_posix.cc",
	Verdicts:   []string{"live", "gone", "foreign"},
	link:       func(_, name string) bool { return name == "SingletonLock" },
	parseLink:  parseChromium,
}

// parseChromium reads "<host>-<pid>", split at the last "-"
// (chrome/browser/process_singleton_posix.cc).
func parseChromium(target string) (*Holder, error) {
	host, pidText, ok := cutLast(target, "-")
	pid, okp := linkPid(pidText)
	if !ok || !okp || host == "" {
		return nil, malformed(FormatChromium, "the target is not <host>-<pid>")
	}
	return &Holder{Pid: pid, PidText: pidText, Host: host, Command: "chrome"}, nil
}

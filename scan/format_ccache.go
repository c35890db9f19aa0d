package scan

import (
	"strconv"
	"strings"
	"time"
)

// ProducerCcache is ccache, whose <file>.lock in its cache directory is a
// symbolic link naming the host, pid and thread that hold it.
const ProducerCcache = "ccache"

// FormatCcache is ccache's lock, a link to host-pid-thread-sec.nsec.
const FormatCcache Format = "ccache" // <file>.lock: link to <host>-<pid>-<thread>-<sec>.<nsec>

var formatCcache = FormatSpec{
	Name:      "ccache",
	Formats:   []Format{FormatCcache},
	Producer:  ProducerCcache,
	Room:      "format_ccache.go",
	Names:     []string{"*.lock"},
	Parse:     func(b []byte) (*Holder, error) { return parseCcache(string(b)) },
	Fuzz:      []string{"scan:FuzzParseLinkLock"},
	Rule:      "ccache breaks a lock whose <file>.alive has not been touched for 2 s and whose target has not changed meanwhile, whatever its pid; lockctl, which never judges by age, holds it while the pid runs on its host.",
	Remedy:    "gone: remove the link (and its .alive file); ccache takes it again by itself (and would have broken it after 2 s itself).",
	Source:    "ccache src/ccache/util/lockfile.cpp, LockFile::do_acquire (the target, k_staleness_limit), LockFile::release",
	Verdicts:  []string{"live", "gone", "foreign", "unknown"},
	link:      func(_, name string) bool { return strings.HasSuffix(name, ".lock") && len(name) > len(".lock") },
	parseLink: parseCcache,
}

// parseCcache reads the target of a ccache lock link (lockfile.cpp,
// do_acquire): "<hostname>-<pid>-<thread id>-<seconds>.<nanoseconds>",
// the thread id as std::this_thread::get_id() prints it (a decimal on
// glibc). The host may contain '-': the other fields are taken from the
// right.
func parseCcache(target string) (*Holder, error) {
	const f = FormatCcache
	rest, when, ok := cutLast(target, "-")
	sec, nsec, okw := strings.Cut(when, ".")
	if !ok || !okw || !isDigits(sec) || !isDigits(nsec) {
		return nil, malformed(f, "the target does not end in -<seconds>.<nanoseconds>")
	}
	rest, thread, ok := cutLast(rest, "-")
	if !ok || !isDigits(thread) {
		return nil, malformed(f, "no thread id before the time")
	}
	host, pidText, ok := cutLast(rest, "-")
	pid, okp := linkPid(pidText)
	if !ok || !okp || host == "" {
		return nil, malformed(f, "the target is not <host>-<pid>-<thread>-<time>")
	}
	h := &Holder{Pid: pid, PidText: pidText, Host: host, Command: "ccache"}
	if s, err := strconv.ParseInt(sec, 10, 64); err == nil && len(nsec) <= 9 {
		ns, _ := strconv.ParseInt(nsec+strings.Repeat("0", 9-len(nsec)), 10, 64)
		h.Since = time.Unix(s, ns) // when it was taken, by its holder's clock
	}
	return h, nil
}

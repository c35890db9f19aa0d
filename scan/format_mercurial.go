package scan

import (
	"path/filepath"
	"strconv"
	"strings"
)

// ProducerMercurial is Mercurial: .hg/wlock and .hg/store/lock.
const ProducerMercurial = "mercurial"

// FormatMercurial is Mercurial's lock, a link to host[/ns]:pid.
const FormatMercurial Format = "mercurial" // .hg/wlock, .hg/store/lock: link to host[/ns]:pid

var formatMercurial = FormatSpec{
	Name:       "mercurial",
	Formats:    []Format{FormatMercurial},
	Producer:   ProducerMercurial,
	Room:       "format_mercurial.go",
	KnownNames: []string{"wlock", "lock"},
	Parse:      func(b []byte) (*Holder, error) { return parseMercurial(string(b)) },
	Fuzz:       []string{"scan:FuzzParseLinkLock"},
	Rule:       "hg takes a lock of another host, or of another pid namespace (it compares the whole <host>/<namespace> prefix), for held; of its own, held while the pid runs.",
	Remedy:     "gone: remove the link; hg takes its lock again by itself.",
	Source:     "mercurial/lock.py, _getlockprefix, lock._trylock, _testlock",
	Verdicts:   []string{"live", "gone", "foreign"},
	link:       isMercurialLockName,
	parseLink:  parseMercurial,
	// Where symbolic links fail, Mercurial writes the same bytes into a
	// regular file.
	claims: func(l *Lock, r *Record) bool { return r.Holder == nil && isMercurialLockName(l.Dir, l.Name) },
	read:   readLinkBytes(ProducerMercurial, parseMercurial),
}

// isMercurialLockName: .hg/wlock, .hg/lock or .hg/store/lock.
func isMercurialLockName(dir, name string) bool {
	base := filepath.Base(dir)
	return (name == "wlock" || name == "lock") && base == ".hg" ||
		name == "lock" && base == "store" && filepath.Base(filepath.Dir(dir)) == ".hg"
}

// parseMercurial reads "<host>:<pid>", or "<host>/<pid namespace inode,
// lowercase hex>:<pid>" on Linux where /proc/self/ns/pid could be read
// (mercurial/lock.py, _getlockprefix and lock._trylock).
func parseMercurial(target string) (*Holder, error) {
	const f = FormatMercurial
	prefix, pidText, ok := cutLast(target, ":")
	pid, okp := linkPid(pidText)
	if !ok || !okp || prefix == "" {
		return nil, malformed(f, "the target is not <host>[/<namespace>]:<pid>")
	}
	h := &Holder{Pid: pid, PidText: pidText, Host: prefix, Command: "hg"}
	if host, ns, ok := cutLast(prefix, "/"); ok {
		ino, err := strconv.ParseUint(ns, 16, 64)
		if err != nil || host == "" || ns != strings.ToLower(ns) {
			return nil, malformed(f, "the pid namespace %q is not a lowercase hex inode", ns)
		}
		h.Host, h.PidNS = host, "pid:["+strconv.FormatUint(ino, 10)+"]"
	}
	return h, nil
}

// readLinkBytes reads a regular file that holds what producer's link
// would point to, with parse, its parser.
func readLinkBytes(producer string, parse func(string) (*Holder, error)) func(l *Lock, r *Record) {
	return func(l *Lock, r *Record) {
		if h, err := parse(string(r.Raw)); err == nil {
			l.Format, l.Producer = Format(producer), producer
			r.Holder, r.Err = h, nil
		}
	}
}

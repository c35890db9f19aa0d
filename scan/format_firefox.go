package scan

import (
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// ProducerFirefox is Firefox: a profile's lock link and .parentlock.
const ProducerFirefox = "firefox"

// FormatFirefox is Firefox's profile lock, a link to IPv4:+pid.
const FormatFirefox Format = "firefox" // profile lock: link to IPv4:+pid

var formatFirefox = FormatSpec{
	Name:       "firefox",
	Formats:    []Format{FormatFirefox, FormatEmpty}, // .parentlock is empty
	Producer:   ProducerFirefox,
	Room:       "format_firefox.go",
	KnownNames: []string{"lock", ".parentlock"},
	Parse:      func(b []byte) (*Holder, error) { return parseFirefox(string(b)) },
	Fuzz:       []string{"scan:FuzzParseLinkLock"},
	Rule:       "Firefox takes a lock link of an address not its host's for held; of its own, held while the pid runs. .parentlock is held by an fcntl lock while the profile is in use.",
	Remedy:     "gone: remove the link; .parentlock is never removed.",
	Source:     "firefox profile/dirserviceprovider/nsProfileLock.cpp, LockWithSymlink, LockWithFcntl",
	Verdicts:   []string{"live", "gone", "foreign", "free"},
	// After Mercurial's, which is asked first: .hg/lock is not Firefox's.
	link:      func(_, name string) bool { return name == "lock" },
	parseLink: parseFirefox,
	// A profile's .parentlock, locked with fcntl(F_SETLK) on the whole
	// file while the profile is in use (nsProfileLock.cpp, LockWithFcntl).
	kernelCall: "fcntl",
	kernelFile: func(d fsx.Dir, path string) bool {
		return filepath.Base(path) == ".parentlock" && isFirefoxProfile(d)
	},
}

// parseFirefox reads "<IPv4 address>:<pid>", the pid after a "+" in
// versions that also take an fcntl lock on .parentlock
// (profile/dirserviceprovider/nsProfileLock.cpp, LockWithSymlink).
func parseFirefox(target string) (*Holder, error) {
	addr, pidText, ok := cutLast(target, ":")
	pidText = strings.TrimPrefix(pidText, "+")
	pid, okp := linkPid(pidText)
	if !ok || !okp || !isIPv4(addr) {
		return nil, malformed(FormatFirefox, "the target is not <IPv4>:[+]<pid>")
	}
	return &Holder{Pid: pid, PidText: pidText, Host: addr, HostAddr: true, Command: "firefox"}, nil
}

// isFirefoxProfile reports whether d looks like a Firefox profile: the
// files Firefox keeps there (prefs.js, compatibility.ini, times.json), or
// its lock link.
func isFirefoxProfile(d fsx.Dir) bool {
	for _, f := range []string{"prefs.js", "compatibility.ini", "times.json"} {
		if st, err := d.Lstat(f); err == nil && st.Mode.IsRegular() {
			return true
		}
	}
	st, err := d.Lstat("lock")
	return err == nil && st.Mode&fs.ModeSymlink != 0
}

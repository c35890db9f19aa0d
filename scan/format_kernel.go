package scan

import (
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// KernelRecord is the whole content of a kernel-lock file that lockctl
// created (docs/record-format.md): it marks the file as a kernel lock, held while
// a process has an flock on it, so that doctor calls it free when none does
// and lockctl run takes it without being told the kind. It names no holder:
// the kernel does.
const KernelRecord = "lockctl-kernel-lock 1\n"

// knownKernelLocks are the lock files of programs that hold them only by a
// kernel lock, by the path that ends in them (a chroot's or a container's
// root, and dpkg --root, put a prefix before it). Each row is checked
// against the producer's own source:
//
//   - dpkg: <admindir>/lock and <admindir>/lock-frontend, locked with
//     fcntl(F_SETLK) on the whole file (guillemj/dpkg lib/dpkg/lock.c,
//     lib/dpkg/dbmodify.c; doc/frontend.txt asks every frontend to lock
//     them so).
//   - apt: the archives and lists directories' lock, by GetLock
//     (apt-pkg/contrib/fileutl.cc), fcntl(F_SETLK) on the whole file.
var knownKernelLocks = []struct{ suffix, by string }{
	{"/var/lib/dpkg/lock", "dpkg"},
	{"/var/lib/dpkg/lock-frontend", "dpkg"},
	{"/var/cache/apt/archives/lock", "apt"},
	{"/var/lib/apt/lists/lock", "apt"},
}

// KnownKernelLock says which program's kernel-lock file path is, by its
// place and name, or "" when it is none known; d is the directory it is
// in, open, where its neighbours are looked at. Besides knownKernelLocks:
//
//   - Firefox: a profile's .parentlock, locked with fcntl(F_SETLK) on the
//     whole file while the profile is in use (nsProfileLock.cpp,
//     LockWithFcntl); the directory is a profile by the files Firefox
//     keeps there (prefs.js, compatibility.ini, times.json) or its lock
//     link.
func KnownKernelLock(d fsx.Dir, path string) string {
	path = filepath.Clean(path)
	for _, k := range knownKernelLocks {
		if strings.HasSuffix(path, k.suffix) { // k.suffix starts a component
			return k.by
		}
	}
	if filepath.Base(path) == ".parentlock" && isFirefoxProfile(d) {
		return ProducerFirefox
	}
	return ""
}

// isFirefoxProfile reports whether d looks like a Firefox profile.
func isFirefoxProfile(d fsx.Dir) bool {
	for _, f := range []string{"prefs.js", "compatibility.ini", "times.json"} {
		if st, err := d.Lstat(f); err == nil && st.Mode.IsRegular() {
			return true
		}
	}
	st, err := d.Lstat("lock")
	return err == nil && st.Mode&fs.ModeSymlink != 0
}

package kernel

// FileLocks implements verdict.FileLockTest: it asks the kernel about the
// advisory locks on one file through a descriptor of its own, which, unlike
// /proc/locks read in a child pid namespace, no namespace filters. It opens
// the file (or directory) relative to its directory without following a
// symbolic link, non-blocking, never a FIFO, socket or device, and only
// when it is still the inode judged.
//
// F_OFD_GETLK (a write-lock test, which a read-only descriptor may make)
// shows the POSIX and OFD locks of every namespace without taking any. A
// flock can be seen only by taking it: with Take, it takes an exclusive
// flock, non-blocking, and releases it at once, so that a refusal is a
// holder and success proves that no other holds one now (a flock taken an
// instant later is the same race as any judgement's). Without Take (doctor,
// which must not take locks) a file with no POSIX or OFD lock is not known
// to be free. A FileLocks holds no state and is safe for concurrent use.
type FileLocks struct {
	// Take lets the test take (and at once release) the file's flock:
	// for --fix and acquire, which may take locks.
	Take bool
}

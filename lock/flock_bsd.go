//go:build unix && !linux

package lock

import "os"

// tryRecordLock does nothing here: the platform has no OFD locks, and a
// classic POSIX lock would be dropped by any close of the file in this
// process. A kernel lock is an flock alone (docs/platforms.md).
func tryRecordLock(f *os.File) error { return nil }

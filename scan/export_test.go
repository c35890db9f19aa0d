package scan

// SetBeforeLockRead lets tests act between the listing of a directory and
// the reading of a lock in it.
func SetBeforeLockRead(w *Walker, f func(name string)) { w.beforeLockRead = f }

// IsPGSocketLock is isPGSocketLock, for the tests of package scan_test.
var IsPGSocketLock = isPGSocketLock

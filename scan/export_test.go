package scan

// SetBeforeLockRead lets tests act between the listing of a directory and
// the reading of a lock in it.
func SetBeforeLockRead(w *Walker, f func(name string)) { w.beforeLockRead = f }

// IsPGSocketLock is isPGSocketLock, for the tests of package scan_test.
var IsPGSocketLock = isPGSocketLock

// TempOf asks every registered format's temp hook about the file name,
// whose bytes are raw, as the walk does once its prefix admits it: the
// producer whose temporary it is, the lock it names and its pid and host.
func TempOf(name string, raw []byte) (producer, lock string, pid int64, host string, ok bool) {
	for _, f := range formats {
		if f.temp == nil || !hasAnyPrefix(name, f.TempPrefixes) {
			continue
		}
		if lock, pid, host, ok := f.temp(name, raw); ok {
			return f.Producer, lock, pid, host, true
		}
	}
	return "", "", 0, "", false
}

// MayBeTemp is mayBeTemp, the walk's cheap test.
var MayBeTemp = mayBeTemp

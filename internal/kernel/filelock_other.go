//go:build !linux

package kernel

// FileLocked implements verdict.FileLockTest: not asked on this platform,
// which has no lock table that could be partial.
func (t FileLocks) FileLocked(dir, name string, dev, ino uint64) (held bool, how string, known bool) {
	return false, "the kernel's locks on one file are not asked on this platform", false
}

//go:build !unix

package lock

import "os"

// devIno is the device and inode of fi: not known here, so keyed locks
// are refused.
func devIno(fi os.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }

//go:build !unix

package fsx

import "io/fs"

// DevIno returns the device and inode numbers of fi where the platform
// reports them; here it does not, so two names for one registry are walked
// twice rather than being recognised as the same.
func DevIno(fi fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }

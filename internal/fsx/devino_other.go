//go:build !unix

package fsx

import "io/fs"

// devIno: this platform does not report them, so two names for one
// registry are walked twice rather than being recognised as the same.
func devIno(fi fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }

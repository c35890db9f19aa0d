//go:build freebsd

package fsx

import "golang.org/x/sys/unix"

// renameNoReplace always refuses on FreeBSD, renaming nothing: x/sys wraps
// no no-replace rename there, and rename(2) replaces. --fix and Acquire's
// break therefore remove nothing here (docs/platforms.md).
func renameNoReplace(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	return pathErr("rename", olddir, old, ErrNoReplaceUnsupported)
}

// nameMax is statfs's f_namemax.
func nameMax(st *unix.Statfs_t) int { return int(st.Namemax) }

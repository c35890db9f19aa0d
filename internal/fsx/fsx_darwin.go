//go:build darwin

package fsx

import "golang.org/x/sys/unix"

// renameNoReplace is renameatx_np(RENAME_EXCL), macOS's RENAME_NOREPLACE.
// A file system that cannot (ENOTSUP, EOPNOTSUPP: some network and FAT
// file systems) gets ErrNoReplaceUnsupported, and nothing is renamed.
func renameNoReplace(olddirfd int, olddir, old string, newdirfd int, newdir, new string) error {
	err := retry(func() error {
		return unix.RenameatxNp(olddirfd, old, newdirfd, new, unix.RENAME_EXCL)
	})
	switch err {
	case nil:
		return nil
	case unix.ENOTSUP, unix.EOPNOTSUPP, unix.EINVAL, unix.ENOSYS:
		return pathErr("rename", olddir, old, ErrNoReplaceUnsupported)
	}
	return pathErr("rename", olddir, old, err)
}

// nameMax is 255 on macOS, whose statfs does not say (APFS and HFS+ take
// 255 bytes of UTF-8).
func nameMax(*unix.Statfs_t) int { return 255 }

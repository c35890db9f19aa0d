//go:build linux

package fsx

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Stacked file systems keep their files on other file systems: overlayfs
// on its layers, eCryptfs on its lower directory. f_type names the stacked
// one only, and an overlay whose upper or lower layer is on NFS is shared
// with other machines as much as the NFS mount is. The kernel has no call
// that names the layers; /proc/self/mountinfo lists them, as paths, in the
// mount's super options (overlay) or as its source (eCryptfs). So a
// stacked file system is local only when every layer it lists opens here
// and is on a local file system itself; one whose layers cannot be found
// or opened (a container's root overlay, whose layers are the host's
// paths) is remote, the cautious side.

// stacked are the magic numbers of the stacked file systems.
var stacked = map[uint32]bool{
	0x794c7630: true, // overlay
	0xf15f:     true, // ecryptfs
}

// maxStack bounds how deep layersLocal follows layers that are themselves
// stacked (the kernel allows two levels).
const maxStack = 4

// layersLocal says what the stacked file system that fd is on sits on when
// that is not wholly local ("nfs", "layers not found here"), or "" when
// every layer is on a local file system.
func layersLocal(fd int, depth int) string {
	const unseen = "layers not found here"
	if depth >= maxStack {
		return "layers stacked too deep"
	}
	mnt, ok := mountID(fd)
	if !ok {
		return unseen
	}
	m, err := mountByID(mnt)
	if err != nil {
		return unseen
	}
	layers := m.layers()
	if len(layers) == 0 {
		return unseen
	}
	for _, p := range layers {
		if !filepath.IsAbs(p) {
			return unseen
		}
		var lfd int
		err := retry(func() (err error) {
			lfd, err = unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			return err
		})
		if err != nil {
			return unseen
		}
		f, err := func() (FS, error) {
			defer closeFd(lfd)
			if lm, ok := mountID(lfd); !ok || lm == mnt {
				// The layer's path is covered by the stacked mount itself
				// (an overlay mounted over its own lower directory): what
				// is under it cannot be reached by path.
				return FS{}, errors.New("layer covered")
			}
			return fsOfDepth(lfd, p, depth+1)
		}()
		switch {
		case err != nil:
			return unseen
		case f.Remote:
			return f.Name
		}
	}
	return ""
}

// mountID is the id of the mount fd is on (as /proc/self/mountinfo
// numbers it), and false where the kernel does not say (before 5.8).
func mountID(fd int) (uint64, bool) {
	var x unix.Statx_t
	err := retry(func() error {
		return unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &x)
	})
	if err != nil || x.Mask&unix.STATX_MNT_ID == 0 {
		return 0, false
	}
	return x.Mnt_id, true
}

// mountEntry is one line of /proc/self/mountinfo, as much as layersLocal
// needs: after the " - " separator, the type, source and super options.
type mountEntry struct {
	fstype, source, super string
}

// mountByID finds mount id in /proc/self/mountinfo, read from a procfs
// (a file bound over it is not the kernel's word).
func mountByID(id uint64) (mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return mountEntry{}, err
	}
	defer f.Close()
	var st unix.Statfs_t
	if err := retry(func() error { return unix.Fstatfs(int(f.Fd()), &st) }); err != nil {
		return mountEntry{}, err
	}
	if uint32(st.Type) != unix.PROC_SUPER_MAGIC {
		return mountEntry{}, errors.New("/proc/self/mountinfo is not on procfs")
	}
	want := strconv.FormatUint(id, 10)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		first, _, _ := strings.Cut(line, " ")
		if first != want {
			continue
		}
		_, post, ok := strings.Cut(line, " - ")
		pf := strings.Fields(post)
		if !ok || len(pf) < 3 {
			return mountEntry{}, fmt.Errorf("mount %d: malformed mountinfo line", id)
		}
		return mountEntry{fstype: pf[0], source: pf[1], super: pf[2]}, nil
	}
	if err := sc.Err(); err != nil {
		return mountEntry{}, err
	}
	return mountEntry{}, fmt.Errorf("mount %d is not in /proc/self/mountinfo", id)
}

// layers lists the directories the stacked mount m keeps its files on:
// overlay's lower, upper and data layers, eCryptfs's source. A path that
// cannot be parsed is returned as it is, so that it fails to open.
func (m mountEntry) layers() []string {
	switch m.fstype {
	case "ecryptfs":
		return []string{unmangle(m.source)}
	case "overlay":
	default:
		return nil
	}
	var out []string
	for _, opt := range strings.Split(m.super, ",") {
		key, val, ok := strings.Cut(opt, "=")
		if !ok {
			continue
		}
		switch key {
		case "upperdir", "lowerdir+", "datadir+":
			out = append(out, unescapeLayer(unmangle(val)))
		case "lowerdir":
			// Layers separated by ':', with "::" before the data-only
			// ones; a ':' in a path is escaped with a backslash.
			for _, p := range splitUnescaped(unmangle(val), ':') {
				if p != "" {
					out = append(out, unescapeLayer(p))
				}
			}
		}
	}
	return out
}

// unmangle undoes mountinfo's octal escapes (\040 for a space, \134 for a
// backslash).
func unmangle(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// splitUnescaped splits s at each sep not preceded by a backslash.
func splitUnescaped(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unescapeLayer takes off the backslashes that escape a character of an
// overlay layer's path.
func unescapeLayer(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

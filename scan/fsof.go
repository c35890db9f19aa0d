// Which file system a lock is judged by: its directory's (dirFS, found
// once and only if needed), or its entry's own where the entry is on a
// mount of its own (ownFS).

package scan

import "github.com/lockctl/lockctl/internal/fsx"

// dirFS finds the file system of a directory once, and only if a lock in
// it needs to know; and, for an entry on a mount of its own, that entry's.
type dirFS struct {
	dir  fsx.Dir
	done bool
	fs   fsx.FS
	// st is the directory's own Stat, for its mount id (statted once).
	statted bool
	st      fsx.Stat
}

// unknownFS is a file system that could not be told: treated like a
// network file system, the cautious side.
var unknownFS = fsx.FS{Name: "unknown", Remote: true}

// entry is f, the file system a lock in the directory is judged by, for
// its entry name (Stat st) as well: where that entry is on another mount
// than the directory (a file or directory bound or mounted over the name:
// a single-file volume of a container, a FUSE file), its own file system
// is, unless the directory's is remote. A directory on ext4 says nothing
// of a FUSE file bound into it. An entry on the directory's mount (the
// mount ids agree, which statx gives with the Stat already taken) costs
// nothing more.
func (d *dirFS) entry(f fsx.FS, name string, st fsx.Stat) fsx.FS {
	if !d.statted {
		d.statted = true
		d.st, _ = d.dir.Stat() // a zero Stat matches no mount: the entry is looked at
	}
	return ownFS(f, d.dir, d.st, name, st)
}

// ownFS is the file system a lock judged by f so far is judged by, given
// its entry name in dir, whose Stat is st: f while the entry is on on's
// mount (on is the Stat of what holds it) or f is remote already;
// otherwise the entry's own file system, which is remote if it cannot be
// told. It keeps f's NameMax: side files are made beside the lock, on the
// directory's file system.
func ownFS(f fsx.FS, dir fsx.Dir, on fsx.Stat, name string, st fsx.Stat) fsx.FS {
	if f.Remote || st.OnMountOf(on) {
		return f
	}
	own, err := dir.FSAt(name)
	if err != nil {
		own = unknownFS
	}
	own.NameMax = f.NameMax
	return own
}

func (d *dirFS) get() fsx.FS {
	if !d.done {
		d.done = true
		if fs, err := d.dir.FS(); err == nil {
			d.fs = fs
		} else {
			// Unknown: treated like a network file system, the cautious side.
			d.fs = unknownFS
		}
	}
	return d.fs
}

// The temporary files of the producers that write their record into a
// file of their own and link it to the lock's name (GnuPG's dotlock,
// shadow's commonio, the X server's LockServer): a producer killed before
// it unlinks that file leaves it behind, beside its lock or with no lock
// at all. Each format says in its unit which names are its temporaries
// (FormatSpec.TempPrefixes, temp); the walk finds them here.

package scan

import (
	"io/fs"
	"sort"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// Temp is a producer's temporary file, found in a lock's directory: the
// file its producer wrote its record into and linked to the lock's name,
// then unlinks (GnuPG's .#lk0x<handle>.<node>.<pid>, shadow's
// <database>.<pid>, an X server's .tX<n>-lock). One that remains was left
// by a producer killed while it held the lock, or while it took it. It
// never changes the lock's verdict; doctor --fix removes it only when its
// pid is provably gone on this host (verdict's Result.Temps).
type Temp struct {
	// Name is its name in the lock's directory (Lock.Dir).
	Name string
	// Pid is the pid of the producer that made it, as its name (or,
	// where the name carries none, its bytes) says; name and bytes agree
	// wherever both carry it.
	Pid int64
	// Host is the node name it carries, "" where the producer records
	// none (its temporaries are then this host's, as its locks are).
	Host string
	// Info is its lstat as read: what a removal is bound to.
	Info Stat
}

// tempFound is a Temp with its unit and the lock it is for.
type tempFound struct {
	t    Temp
	unit *FormatSpec
	// lock is the name of the lock it is for, "" where its name does not
	// say (GnuPG's names the handle, not the file locked).
	lock string
	used bool
}

// tempPrefixes are every format's TempPrefixes: the cheap test a name
// passes before any format's temp is asked about it; tempFirst are their
// first bytes, the test before that one.
var (
	tempPrefixes = registeredNames(func(f *FormatSpec) []string { return f.TempPrefixes })
	tempFirst    = func() (b [256]bool) {
		for _, p := range tempPrefixes {
			b[p[0]] = true
		}
		return b
	}()
)

// mayBeTemp says name starts like some format's temporary file.
func mayBeTemp(name string) bool {
	if name == "" || !tempFirst[name[0]] {
		return false
	}
	for _, p := range tempPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// readTemps reads the entries names of d that may be temporaries, each a
// regular file read without following a link, and keeps those a format
// says are its own.
func readTemps(d fsx.Dir, names []string) []*tempFound {
	var out []*tempFound
	for _, n := range names {
		r := readRecord(d, n, n)
		if r.Err != nil || !r.Info.Mode.IsRegular() {
			continue
		}
		for _, f := range formats {
			if f.temp == nil || !hasAnyPrefix(n, f.TempPrefixes) {
				continue
			}
			if lock, pid, host, ok := f.temp(n, r.Raw); ok {
				out = append(out, &tempFound{t: Temp{Name: n, Pid: pid, Host: host, Info: r.Info}, unit: f, lock: lock})
				break
			}
		}
	}
	return out
}

func hasAnyPrefix(s string, ps []string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// isTemp says name is one of ts.
func isTemp(ts []*tempFound, name string) bool {
	for _, t := range ts {
		if t.t.Name == name {
			return true
		}
	}
	return false
}

// attachTemps gives the lock l the temporaries of ts that are for it: by
// name, whatever l was read as (they change nothing of its verdict, and
// are removed only once it is swept gone), or, where the name does not
// say, by being its inode and its producer's (a producer killed holding
// the lock leaves its temporary hard-linked to it).
func attachTemps(l *Lock, ts []*tempFound) {
	if l == nil {
		return
	}
	for _, t := range ts {
		if t.used {
			continue
		}
		byInode := t.lock == "" && l.Kind == KindFile && t.unit.Producer == l.Producer && t.t.Info.SameFile(l.Info)
		if t.lock == l.Name || byInode {
			t.used = true
			l.Temps = append(l.Temps, t.t)
		}
	}
}

// dropTemps sets aside the temporaries of ts for the entry name, which is
// no lock (a data file): they are not reported.
func dropTemps(ts []*tempFound, name string) {
	for _, t := range ts {
		if t.lock == name {
			t.used = true
		}
	}
}

// tempOrphans makes a Lock of KindMissing for each lock of d whose
// temporaries in ts no lock took: the lock they are for no longer exists
// (or, for a temporary whose name does not say its lock, none is its
// inode). One is reported when w would report its lock: a temporary
// whose name does not say which lock it is for stands for a lock
// "<its name>.lock" (GnuPG's lock is "<file>.lock").
func (w *Walker) tempOrphans(d fsx.Dir, ts []*tempFound, dfs *dirFS) []*Lock {
	byLock := map[string]*Lock{}
	var names []string
	for _, t := range ts {
		name, probe := t.lock, t.lock
		if name == "" {
			name, probe = t.t.Name, t.t.Name+".lock"
		}
		if t.used || !w.Match.IsLock(probe) {
			continue
		}
		l := byLock[name]
		if l == nil {
			l = &Lock{Path: d.Join(name), Dir: d.Path(), Name: name, Kind: KindMissing, Format: t.unit.Formats[0], Producer: t.unit.Producer, FS: dfs.get()}
			byLock[name] = l
			names = append(names, name)
		}
		t.used = true
		l.Temps = append(l.Temps, t.t)
		l.FS = dfs.entry(l.FS, t.t.Name, t.t.Info)
	}
	sort.Strings(names)
	out := make([]*Lock, len(names))
	for i, n := range names {
		out[i] = byLock[n]
	}
	return out
}

// tempCandidates keeps the names of a listing that may be temporaries.
type tempCandidates []string

func (c *tempCandidates) add(name string, typ fs.FileMode) {
	if (typ.IsRegular() || typ == fs.ModeIrregular) && mayBeTemp(name) {
		*c = append(*c, strings.Clone(name))
	}
}

//go:build linux

package scan_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"golang.org/x/sys/unix"
)

// outsidePid is the pid in every record planted outside a registry. A
// holder with this pid in a walk's results means the walk left the registry
// or followed a symbolic link.
const outsidePid = 31337

// walkDeadline bounds every walk: a walk that opens a FIFO without
// O_NONBLOCK hangs, and the test must fail rather than hang with it.
const walkDeadline = 30 * time.Second

// tempDir is t.TempDir() with symbolic links resolved, as ResolveRoot
// reports paths.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo %q: %v", p, err)
	}
}

type walkResult struct {
	locks []*scan.Lock
	warns []error
	err   error
}

// walk resolves p as the operator would name it and walks it with the
// given --name globs, failing the test if the walk does not return within
// walkDeadline. fifos are opened for writing if it hangs, to release it.
func walk(t *testing.T, p string, globs []string, fifos ...string) walkResult {
	t.Helper()
	m, err := scan.NewMatcher(globs)
	if err != nil {
		t.Fatalf("NewMatcher(%q): %v", globs, err)
	}
	r, err := scan.ResolveRoot(p, m)
	if err != nil {
		t.Fatalf("ResolveRoot(%q): %v", p, err)
	}
	return walkRoot(t, r, m, fifos...)
}

func walkRoot(t *testing.T, r scan.Root, m scan.Matcher, fifos ...string) walkResult {
	t.Helper()
	done := make(chan walkResult, 1)
	go func() {
		var res walkResult
		w := scan.Walker{
			Match: m,
			Found: func(l *scan.Lock) { res.locks = append(res.locks, l) },
			Warn:  func(err error) { res.warns = append(res.warns, err) },
		}
		res.err = w.Walk(r)
		done <- res
	}()
	select {
	case res := <-done:
		return res
	case <-time.After(walkDeadline):
		// Release a walker blocked opening a FIFO, so the process can go on.
		for _, f := range fifos {
			if fd, err := unix.Open(f, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
				unix.Close(fd)
			}
		}
		t.Fatalf("walking %q did not return within %v (blocked opening a FIFO or device?)", r.Path, walkDeadline)
		return walkResult{}
	}
}

// byPath indexes locks by path, failing if one is reported twice, and
// checks that each lies inside dir.
func byPath(t *testing.T, locks []*scan.Lock, dir string) map[string]*scan.Lock {
	t.Helper()
	out := map[string]*scan.Lock{}
	for _, l := range locks {
		if _, dup := out[l.Path]; dup {
			t.Errorf("lock %q reported twice", l.Path)
		}
		out[l.Path] = l
		if l.Path != l.Dir+"/"+l.Name {
			t.Errorf("lock Path %q != Dir %q + / + Name %q", l.Path, l.Dir, l.Name)
		}
		if !strings.HasPrefix(l.Path, dir+"/") {
			t.Errorf("lock %q is outside %q", l.Path, dir)
		}
	}
	return out
}

func names(m map[string]*scan.Lock) []string {
	var out []string
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// wantLocks asserts that exactly the locks at paths were found.
func wantLocks(t *testing.T, got map[string]*scan.Lock, paths ...string) {
	t.Helper()
	sort.Strings(paths)
	if g := names(got); strings.Join(g, "\x00") != strings.Join(paths, "\x00") {
		t.Fatalf("locks found = %q, want %q", g, paths)
	}
}

func holderPid(t *testing.T, l *scan.Lock, i int) int64 {
	t.Helper()
	if len(l.Holders) <= i {
		t.Fatalf("%q: %d holder records, want more than %d", l.Path, len(l.Holders), i)
	}
	r := l.Holders[i]
	if r.Err != nil || r.Holder == nil {
		t.Fatalf("%q: holder record %q: holder %v, error %v", l.Path, r.File, r.Holder, r.Err)
	}
	return r.Holder.Pid
}

func wantFormatError(t *testing.T, what string, err error) {
	t.Helper()
	var fe *scan.FormatError
	if !errors.As(err, &fe) {
		t.Errorf("%s: error = %v, want a *scan.FormatError", what, err)
	}
}

func TestWalkRegistryA(t *testing.T) {
	reg := tempDir(t)
	team := filepath.Join(reg, "teams", "alpha")
	mkdir(t, filepath.Join(team, ".config.lock"))
	writeFile(t, filepath.Join(team, ".config.lock.holder"), recA(tokA, "4213", "agmsg-team", "host.example.com"))
	writeFile(t, filepath.Join(team, "config.json"), "{}\n")

	res := walk(t, reg, nil)
	if res.err != nil || len(res.warns) > 0 {
		t.Fatalf("walk error %v, warnings %v", res.err, res.warns)
	}
	got := byPath(t, res.locks, reg)
	p := filepath.Join(team, ".config.lock")
	wantLocks(t, got, p)
	l := got[p]
	if l.Kind != scan.KindDir || l.Format != scan.FormatRegistryA {
		t.Errorf("Kind, Format = %q, %q, want dir, registry-a", l.Kind, l.Format)
	}
	if pid := holderPid(t, l, 0); pid != 4213 {
		t.Errorf("Holders[0].Holder.Pid = %d, want 4213", pid)
	}
	if f := l.Holders[0].File; f != ".config.lock.holder" {
		t.Errorf("Holders[0].File = %q, want .config.lock.holder", f)
	}
	if len(l.Claims) != 0 {
		t.Errorf("Claims = %+v, want none: the holder file is the record, not a claim", l.Claims)
	}
	if !l.Info.Mode.IsDir() || l.Info.Ino == 0 {
		t.Errorf("Info = %+v, want the directory's", l.Info)
	}
}

func TestWalkEmptyLockDir(t *testing.T) {
	reg := tempDir(t)
	mkdir(t, filepath.Join(reg, ".config.lock"))

	res := walk(t, reg, nil)
	got := byPath(t, res.locks, reg)
	p := filepath.Join(reg, ".config.lock")
	wantLocks(t, got, p)
	if l := got[p]; l.Kind != scan.KindDir || l.Format != scan.FormatEmpty || len(l.Holders) != 0 {
		t.Errorf("Kind, Format, Holders = %q, %q, %v, want dir, empty, none", l.Kind, l.Format, l.Holders)
	}
}

// TestWalkProperLockfile: an empty <file>.lock directory beside <file> is
// npm's proper-lockfile's; without <file> beside it, or with anything
// inside, it is no one's in particular.
func TestWalkProperLockfile(t *testing.T) {
	reg := tempDir(t)
	writeFile(t, filepath.Join(reg, "db.json"), "{}")
	mkdir(t, filepath.Join(reg, "db.json.lock"))
	mkdir(t, filepath.Join(reg, "other.lock"))
	writeFile(t, filepath.Join(reg, "full"), "")
	mkdir(t, filepath.Join(reg, "full.lock"))
	writeFile(t, filepath.Join(reg, "full.lock", "x"), "")

	got := byPath(t, walk(t, reg, nil).locks, reg)
	for name, want := range map[string]string{"db.json.lock": scan.ProducerProperLockfile, "other.lock": "", "full.lock": ""} {
		if l := got[filepath.Join(reg, name)]; l == nil || l.Producer != want {
			t.Errorf("%s: %+v, want producer %q", name, l, want)
		}
	}
}

func TestWalkRegistryB(t *testing.T) {
	reg := tempDir(t)
	tok2 := "4214." + hex32 + ".2"
	lock := filepath.Join(reg, "x.lock")
	writeFile(t, filepath.Join(lock, "holder."+tokB), recB(tokB, "4213", "scope "+scope64, "break writers"))
	writeFile(t, filepath.Join(lock, "writer."+tokB+".999"), "")
	writeFile(t, filepath.Join(lock, "pending."+tokB+".x"), "")
	writeFile(t, filepath.Join(lock, "junk"), "")
	// Beside it: an unpublished record and a release left behind.
	writeFile(t, filepath.Join(reg, "x.lock.pub."+tok2), recB(tok2, "4214"))
	writeFile(t, filepath.Join(reg, "x.lock.rel."+tokB), recB(tokB, "4213"))
	// Two acquirers raced.
	race := filepath.Join(reg, "race.lock")
	writeFile(t, filepath.Join(race, "holder."+tokB), recB(tokB, "4213"))
	writeFile(t, filepath.Join(race, "holder."+tok2), recB(tok2, "4214"))
	// A record under another token than its name.
	bad := filepath.Join(reg, "bad.lock")
	writeFile(t, filepath.Join(bad, "holder."+tok2), recB(tokB, "4213"))
	// Writers only: the holder record is gone but its writers are not.
	wo := filepath.Join(reg, "writers-only.lock")
	writeFile(t, filepath.Join(wo, "writer."+tokB+".77"), "")

	res := walk(t, reg, nil)
	if res.err != nil || len(res.warns) > 0 {
		t.Fatalf("walk error %v, warnings %v", res.err, res.warns)
	}
	got := byPath(t, res.locks, reg)
	wantLocks(t, got, lock, race, bad, wo)

	l := got[lock]
	if l.Kind != scan.KindDir || l.Format != scan.FormatRegistryB {
		t.Errorf("x.lock: Kind, Format = %q, %q, want dir, registry-b", l.Kind, l.Format)
	}
	if pid := holderPid(t, l, 0); pid != 4213 {
		t.Errorf("x.lock: Holders[0].Holder.Pid = %d, want 4213", pid)
	}
	if h := l.Holders[0]; h.File != "x.lock/holder."+tokB || h.Holder.Break != "writers" || h.Holder.Scope != scope64 {
		t.Errorf("x.lock: Holders[0] = %q break %q scope %q", h.File, h.Holder.Break, h.Holder.Scope)
	}
	if len(l.Writers) != 1 || l.Writers[0] != (scan.Writer{Name: "writer." + tokB + ".999", Token: tokB, Pid: 999}) {
		t.Errorf("x.lock: Writers = %+v, want writer.%s.999 pid 999", l.Writers, tokB)
	}
	if len(l.Pending) != 1 || l.Pending[0] != "pending."+tokB+".x" {
		t.Errorf("x.lock: Pending = %q", l.Pending)
	}
	if len(l.Others) != 1 || l.Others[0] != "junk" {
		t.Errorf("x.lock: Others = %q, want [junk]", l.Others)
	}
	claims := map[scan.ClaimKind]scan.Claim{}
	for _, c := range l.Claims {
		claims[c.Kind] = c
	}
	if len(l.Claims) != 2 {
		t.Fatalf("x.lock: Claims = %+v, want the .pub and the .rel", l.Claims)
	}
	if c := claims[scan.ClaimPublish]; c.By != 4214 || c.Record.File != "x.lock.pub."+tok2 || c.Record.Holder == nil || c.Record.Holder.Pid != 4214 {
		t.Errorf("x.lock: publish claim = %+v", c)
	}
	if c := claims[scan.ClaimRelease]; c.By != 4213 || c.Record.Holder == nil || c.Record.Holder.Pid != 4213 {
		t.Errorf("x.lock: release claim = %+v", c)
	}

	if r := got[race]; len(r.Holders) != 2 || r.Format != scan.FormatRegistryB {
		t.Errorf("race.lock: %d holders, format %q, want 2, registry-b", len(r.Holders), r.Format)
	} else {
		pids := []int64{holderPid(t, r, 0), holderPid(t, r, 1)}
		sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
		if pids[0] != 4213 || pids[1] != 4214 {
			t.Errorf("race.lock: holder pids = %v, want [4213 4214]", pids)
		}
	}

	if b := got[bad]; len(b.Holders) != 1 || b.Holders[0].Holder != nil {
		t.Errorf("bad.lock: Holders = %+v, want one unparsed record", b.Holders)
	} else {
		wantFormatError(t, "bad.lock holder", b.Holders[0].Err)
	}

	if w := got[wo]; w.Format != scan.FormatRegistryB || len(w.Holders) != 0 || len(w.Writers) != 1 || w.Writers[0].Pid != 77 {
		t.Errorf("writers-only.lock: Format %q, Holders %v, Writers %+v", w.Format, w.Holders, w.Writers)
	}
}

func TestWalkPidFiles(t *testing.T) {
	reg := tempDir(t)
	files := []struct {
		name    string
		content string
		format  scan.Format
		pid     int64 // 0: no holder expected
		wantErr bool
	}{
		{"dotlock.lock", "4213\n", scan.FormatPid, 4213, false},
		{"bare.lck", "4213", scan.FormatPid, 4213, false},
		{"LCK..ttyS0", "      4213\n", scan.FormatUUCP, 4213, false},
		{"nopid.lock", "0\n", scan.FormatNoPid, 0, false},
		{"procmail.lock", "0", scan.FormatNoPid, 0, false},
		{"empty.lock", "", scan.FormatEmpty, 0, false},
		{"kv.lock", "pid=812\nhost=h\n", scan.FormatKeyValue, 812, false},
		{"kvdup.lock", "pid=812\npid=813\n", scan.FormatKeyValue, 0, true},
		{"letters.lock", "abc\n", scan.FormatUnrecognized, 0, true},
		{"binary.lock", "\x7fELF\x00\x1b[2J\xff", scan.FormatUnrecognized, 0, true},
		{"gena.lock", recA("", "4213", "x", "h1"), scan.FormatUnrecognized, 0, true},
	}
	var paths []string
	for _, f := range files {
		writeFile(t, filepath.Join(reg, f.name), f.content)
		paths = append(paths, filepath.Join(reg, f.name))
	}
	writeFile(t, filepath.Join(reg, "notes.txt"), "4213\n")
	// A daemon's pid file is found by default now (TestWalkFindsPidFiles);
	// one whose bytes are no pid is not.
	writeFile(t, filepath.Join(reg, "app.pid"), "not a pid\n")

	res := walk(t, reg, nil)
	if res.err != nil || len(res.warns) > 0 {
		t.Fatalf("walk error %v, warnings %v", res.err, res.warns)
	}
	got := byPath(t, res.locks, reg)
	wantLocks(t, got, paths...)
	for _, f := range files {
		l := got[filepath.Join(reg, f.name)]
		if l.Kind != scan.KindFile || l.Format != f.format {
			t.Errorf("%s: Kind, Format = %q, %q, want file, %q", f.name, l.Kind, l.Format, f.format)
		}
		if len(l.Holders) != 1 {
			t.Errorf("%s: %d holder records, want 1 (the file itself)", f.name, len(l.Holders))
			continue
		}
		r := l.Holders[0]
		if r.File != f.name || string(r.Raw) != f.content || !r.Info.SameFile(l.Info) {
			t.Errorf("%s: record File %q Raw %q, want %q %q of the same inode", f.name, r.File, r.Raw, f.name, f.content)
		}
		switch {
		case f.wantErr:
			if r.Holder != nil {
				t.Errorf("%s: Holder = %+v, want none", f.name, r.Holder)
			}
			wantFormatError(t, f.name, r.Err)
		case f.pid == 0:
			if r.Holder != nil || r.Err != nil {
				t.Errorf("%s: Holder, Err = %+v, %v, want none, nil", f.name, r.Holder, r.Err)
			}
		default:
			if pid := holderPid(t, l, 0); pid != f.pid {
				t.Errorf("%s: Pid = %d, want %d", f.name, pid, f.pid)
			}
		}
	}
}

// Side files are never locks of their own, even when their name matches a
// lock pattern too (LCK..ttyS0.dead.1.2 matches LCK..*).
func TestWalkSideFilesAreNotLocks(t *testing.T) {
	reg := tempDir(t)
	x := filepath.Join(reg, "x.lock")
	lck := filepath.Join(reg, "LCK..ttyS0")
	writeFile(t, x, "4213\n")
	writeFile(t, x+".dead.5.123", "4213\n")
	writeFile(t, x+".holder.releasing.6", recA("", "4213", "x", "h1"))
	writeFile(t, x+".pub."+tokB, recB(tokB, "4213"))
	writeFile(t, x+".rel."+tokB, recB(tokB, "4213"))
	writeFile(t, x+".dead."+tokB+".77", recB(tokB, "4213"))
	writeFile(t, lck, "      4213\n")
	writeFile(t, lck+".dead.1.2", "      4213\n")

	res := walk(t, reg, nil)
	if res.err != nil || len(res.warns) > 0 {
		t.Fatalf("walk error %v, warnings %v", res.err, res.warns)
	}
	got := byPath(t, res.locks, reg)
	wantLocks(t, got, x, lck)

	type claim struct {
		kind scan.ClaimKind
		by   int64
		pid  int64
	}
	want := map[string]claim{
		"x.lock.dead.5.123":           {scan.ClaimBreak, 5, 4213},
		"x.lock.holder.releasing.6":   {scan.ClaimRelease, 6, 4213},
		"x.lock.pub." + tokB:          {scan.ClaimPublish, 4213, 4213},
		"x.lock.rel." + tokB:          {scan.ClaimRelease, 4213, 4213},
		"x.lock.dead." + tokB + ".77": {scan.ClaimBreak, 77, 4213},
	}
	if len(got[x].Claims) != len(want) {
		t.Errorf("x.lock: %d claims, want %d", len(got[x].Claims), len(want))
	}
	for _, c := range got[x].Claims {
		w, ok := want[c.Record.File]
		if !ok {
			t.Errorf("x.lock: unexpected claim %q", c.Record.File)
			continue
		}
		if c.Kind != w.kind || c.By != w.by || c.Record.Holder == nil || c.Record.Holder.Pid != w.pid {
			t.Errorf("claim %q = kind %q by %d holder %+v (err %v), want %q by %d pid %d",
				c.Record.File, c.Kind, c.By, c.Record.Holder, c.Record.Err, w.kind, w.by, w.pid)
		}
	}
	if cs := got[lck].Claims; len(cs) != 1 || cs[0].Kind != scan.ClaimBreak || cs[0].By != 1 || cs[0].Record.File != "LCK..ttyS0.dead.1.2" {
		t.Errorf("LCK..ttyS0: Claims = %+v, want the break claim by pid 1", cs)
	}
}

// Side files whose lock is gone are reported once per lock, as a missing
// lock carrying them as claims.
func TestWalkOrphanSideFiles(t *testing.T) {
	reg := tempDir(t)
	y := filepath.Join(reg, "y.lock")
	z := filepath.Join(reg, "z.lock")
	w := filepath.Join(reg, "w.lock")
	lck := filepath.Join(reg, "LCK..ttyS1")
	writeFile(t, y+".dead.5.123", "4213\n")
	writeFile(t, y+".holder.releasing.6", "4213\n")
	writeFile(t, z+".holder", recA("", "4213", "x", "h1"))
	writeFile(t, w+".pub."+tokB, recB(tokB, "4213"))
	writeFile(t, lck+".dead.1.2", "      4213\n")

	res := walk(t, reg, nil)
	if res.err != nil || len(res.warns) > 0 {
		t.Fatalf("walk error %v, warnings %v", res.err, res.warns)
	}
	got := byPath(t, res.locks, reg)
	wantLocks(t, got, y, z, w, lck)
	for p, want := range map[string]struct {
		claims int
		format scan.Format
		kind   scan.ClaimKind
	}{
		y:   {2, scan.FormatPid, ""},
		z:   {1, scan.FormatRegistryA, scan.ClaimHolder},
		w:   {1, scan.FormatRegistryB, scan.ClaimPublish},
		lck: {1, scan.FormatUUCP, scan.ClaimBreak},
	} {
		l := got[p]
		if l.Kind != scan.KindMissing || len(l.Holders) != 0 || l.Info != (fsx.Stat{}) {
			t.Errorf("%s: Kind %q, Holders %v, Info %+v, want missing, none, zero", l.Name, l.Kind, l.Holders, l.Info)
		}
		if len(l.Claims) != want.claims || l.Format != want.format {
			t.Errorf("%s: %d claims, format %q, want %d, %q", l.Name, len(l.Claims), l.Format, want.claims, want.format)
			continue
		}
		for _, c := range l.Claims {
			if c.Record.Holder == nil || c.Record.Holder.Pid != 4213 {
				t.Errorf("%s: claim %q holder %+v, error %v, want pid 4213", l.Name, c.Record.File, c.Record.Holder, c.Record.Err)
			}
			if want.kind != "" && c.Kind != want.kind {
				t.Errorf("%s: claim %q kind %q, want %q", l.Name, c.Record.File, c.Kind, want.kind)
			}
		}
	}
}

func TestNewMatcher(t *testing.T) {
	for _, bad := range [][]string{{"["}, {"*.lock", "a/b"}, {"x\\"}} {
		if _, err := scan.NewMatcher(bad); err == nil {
			t.Errorf("NewMatcher(%q) = nil error, want one", bad)
		}
	}
	m, err := scan.NewMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"x.lock": true, ".config.lock": true, "a.lck": true, "LCK..ttyS0": true,
		"x.lock.holder": false, "x.pid": true, "LCK.ttyS0": false,
		"postmaster.pid": true, "lock": true, "SingletonLock": true, ".#notes.txt": true,
	} {
		if got := m.IsLock(name); got != want {
			t.Errorf("default IsLock(%q) = %v, want %v", name, got, want)
		}
	}
	// A producer's names are kept only when that producer's.
	for name, want := range map[string]bool{"lock": true, "wlock": true, "SingletonLock": true, ".#notes.txt": true, "x.pid": true, "x.lock": false, "postmaster.pid": false} {
		if got := m.OnlyIfKnown(name); got != want {
			t.Errorf("default OnlyIfKnown(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestWalkFindsPidFiles: with the default names a walk reports a daemon's
// pid file, <name>.pid holding a pid, and not a file that merely ends in
// .pid.
func TestWalkFindsPidFiles(t *testing.T) {
	reg := tempDir(t)
	writeFile(t, filepath.Join(reg, "run", "sshd.pid"), "4213\n")
	writeFile(t, filepath.Join(reg, "run", "uucp.pid"), "      4213\n")
	writeFile(t, filepath.Join(reg, "data", "notes.pid"), "not a pid\n")
	writeFile(t, filepath.Join(reg, "data", "empty.pid"), "")
	m, err := scan.NewMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	w := scan.Walker{Match: m, Found: func(l *scan.Lock) { got = append(got, l.Name+" "+string(l.Format)) }}
	r, err := scan.ResolveRoot(reg, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Walk(r); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"sshd.pid pid", "uucp.pid uucp"}; !slices.Equal(got, want) {
		t.Errorf("default walk found %q, want %q", got, want)
	}
}

func TestWalkNamePatterns(t *testing.T) {
	reg := tempDir(t)
	writeFile(t, filepath.Join(reg, "app.pid"), "4213\n")
	writeFile(t, filepath.Join(reg, "app.pid.dead.5.6"), "4213\n")
	writeFile(t, filepath.Join(reg, "x.lock"), "4213\n")
	writeFile(t, filepath.Join(reg, "sub", "db.pid"), "77\n")
	writeFile(t, filepath.Join(reg, "sub", "z.lock.holder"), recA("", "1", "x", "h"))

	res := walk(t, reg, []string{"*.pid"})
	got := byPath(t, res.locks, reg)
	wantLocks(t, got, filepath.Join(reg, "app.pid"), filepath.Join(reg, "sub", "db.pid"))
	if l := got[filepath.Join(reg, "app.pid")]; len(l.Claims) != 1 || l.Claims[0].By != 5 {
		t.Errorf("app.pid: Claims = %+v, want the break claim by 5", l.Claims)
	}

	res = walk(t, reg, []string{"x.lock", "db.*"})
	got = byPath(t, res.locks, reg)
	wantLocks(t, got, filepath.Join(reg, "x.lock"), filepath.Join(reg, "sub", "db.pid"))
}

// A lock named as a root is read with its side files, and nothing else in
// its directory is.
func TestWalkLockAsRoot(t *testing.T) {
	reg := tempDir(t)
	x := filepath.Join(reg, "x.lock")
	writeFile(t, x, "4213\n")
	writeFile(t, x+".dead.5.123", "4213\n")
	writeFile(t, filepath.Join(reg, "other.lock"), "1\n")
	writeFile(t, filepath.Join(reg, "other.lock.dead.5.123"), "1\n")
	cfg := filepath.Join(reg, ".config.lock")
	mkdir(t, cfg)
	writeFile(t, cfg+".holder", recA("", "4213", "x", "h1"))
	// Glob characters in the name are the name, not a pattern: a1zz.lock's
	// side file must not be taken for one of a[1]*?.lock.
	glob := filepath.Join(reg, "a[1]*?.lock")
	mkdir(t, glob)
	writeFile(t, glob+".holder", recA("", "4213", "x", "h1"))
	writeFile(t, filepath.Join(reg, "a1zz.lock.dead.5.6"), "1\n")
	// A file the patterns do not match is still a lock when named.
	plain := filepath.Join(reg, "mylock")
	writeFile(t, plain, "      4213\n")

	m, _ := scan.NewMatcher(nil)
	for _, tc := range []struct {
		path   string
		kind   scan.Kind
		format scan.Format
		claims int
	}{
		{x, scan.KindFile, scan.FormatPid, 1},
		{cfg, scan.KindDir, scan.FormatRegistryA, 0},
		{glob, scan.KindDir, scan.FormatRegistryA, 0},
		{plain, scan.KindFile, scan.FormatUUCP, 0},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			r, err := scan.ResolveRoot(tc.path, m)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Lock || r.Path != tc.path {
				t.Fatalf("ResolveRoot(%q) = Lock %v Path %q, want a lock at the same path", tc.path, r.Lock, r.Path)
			}
			res := walkRoot(t, r, m)
			if res.err != nil || len(res.warns) > 0 {
				t.Fatalf("walk error %v, warnings %v", res.err, res.warns)
			}
			got := byPath(t, res.locks, reg)
			wantLocks(t, got, tc.path)
			l := got[tc.path]
			if l.Kind != tc.kind || l.Format != tc.format || len(l.Claims) != tc.claims {
				t.Errorf("Kind, Format, claims = %q, %q, %d, want %q, %q, %d", l.Kind, l.Format, len(l.Claims), tc.kind, tc.format, tc.claims)
			}
			if pid := holderPid(t, l, 0); pid != 4213 {
				t.Errorf("Pid = %d, want 4213", pid)
			}
		})
	}
}

// A lock whose name is not valid UTF-8 must pair with its side files the
// same whether its registry is walked or the lock itself is named.
func TestWalkLockAsRootInvalidUTF8Name(t *testing.T) {
	reg := tempDir(t)
	lock := filepath.Join(reg, "\xff.lock")
	mkdir(t, lock)
	writeFile(t, lock+".holder", recA("", "4213", "x", "h1"))

	got := byPath(t, walk(t, reg, nil).locks, reg)
	wantLocks(t, got, lock)
	if l := got[lock]; l.Format != scan.FormatRegistryA {
		t.Errorf("walking the registry: Format = %q, want registry-a", l.Format)
	}
	got = byPath(t, walk(t, lock, nil).locks, reg)
	wantLocks(t, got, lock)
	if l := got[lock]; l.Format != scan.FormatRegistryA || len(l.Holders) != 1 {
		t.Errorf("naming the lock: Format = %q with %d holders, want registry-a with its %q.holder",
			l.Format, len(l.Holders), l.Name)
	}
}

// /var/lock is a symbolic link to /run/lock on most systems: naming either
// walks the same directory, and locks are reported under the real path.
func TestResolveRootSymlinkedRegistry(t *testing.T) {
	base := tempDir(t)
	real := filepath.Join(base, "run", "lock")
	writeFile(t, filepath.Join(real, "LCK..ttyS0"), "      4213\n")
	mkdir(t, filepath.Join(base, "var"))
	symlink(t, "../run/lock", filepath.Join(base, "var", "lock"))

	m, _ := scan.NewMatcher(nil)
	given := filepath.Join(base, "var", "lock")
	r, err := scan.ResolveRoot(given, m)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lock || r.Path != real || r.Given != given {
		t.Fatalf("ResolveRoot(%q) = Lock %v Path %q Given %q, want a registry at %q", given, r.Lock, r.Path, r.Given, real)
	}
	r2, err := scan.ResolveRoot(real, m)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Same(r2) {
		t.Errorf("Root(%q).Same(Root(%q)) = false, want true", given, real)
	}
	res := walkRoot(t, r, m)
	wantLocks(t, byPath(t, res.locks, real), filepath.Join(real, "LCK..ttyS0"))

	// A lock named through the link: its parent is resolved.
	r, err = scan.ResolveRoot(filepath.Join(given, "LCK..ttyS0"), m)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Lock || r.Path != filepath.Join(real, "LCK..ttyS0") {
		t.Errorf("ResolveRoot(lock through link) = Lock %v Path %q, want the lock at %q", r.Lock, r.Path, filepath.Join(real, "LCK..ttyS0"))
	}
	if _, err := scan.ResolveRoot(filepath.Join(base, "nonexistent"), m); !errors.As(err, new(*fs.PathError)) {
		t.Errorf("ResolveRoot(missing) error = %v, want an *fs.PathError", err)
	}
}

// A symbolic link named as a root that leads to anything but a directory is
// a lock of its own, and is not followed.
func TestResolveRootSymlinkToFile(t *testing.T) {
	base := tempDir(t)
	reg := filepath.Join(base, "reg")
	mkdir(t, reg)
	writeFile(t, filepath.Join(base, "target.lock"), "31337\n")
	for _, tc := range []struct{ name, target string }{
		{"link.lock", filepath.Join(base, "target.lock")},
		{"link", filepath.Join(base, "target.lock")},
		{"dangling.lock", filepath.Join(base, "nowhere")},
		{"fifo.lock", filepath.Join(base, "fifo")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "fifo.lock" {
				mkfifo(t, filepath.Join(base, "fifo"))
			}
			p := filepath.Join(reg, tc.name)
			symlink(t, tc.target, p)
			m, _ := scan.NewMatcher(nil)
			r, err := scan.ResolveRoot(p, m)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Lock || r.Path != p {
				t.Fatalf("ResolveRoot(%q) = Lock %v Path %q, want the link itself as a lock", p, r.Lock, r.Path)
			}
			res := walkRoot(t, r, m, filepath.Join(base, "fifo"))
			got := byPath(t, res.locks, reg)
			wantLocks(t, got, p)
			if l := got[p]; l.Kind != scan.KindSymlink || len(l.Holders) != 0 || l.Format != scan.FormatUnrecognized {
				t.Errorf("Kind %q, Holders %+v, Format %q, want an unread symlink", l.Kind, l.Holders, l.Format)
			}
		})
	}
}

// A symbolic link to a directory, named as a root, is the operator's
// choice: it is resolved and walked.
func TestResolveRootSymlinkToDir(t *testing.T) {
	base := tempDir(t)
	real := filepath.Join(base, "real")
	writeFile(t, filepath.Join(real, "a.lock"), "4213\n")
	symlink(t, real, filepath.Join(base, "link"))
	res := walk(t, filepath.Join(base, "link"), nil)
	wantLocks(t, byPath(t, res.locks, real), filepath.Join(real, "a.lock"))
}

// hostileRegistry builds a registry that tries every way out: symbolic
// links out of it, loops, FIFOs, sockets and devices where records belong,
// sparse giant records, binary records and names built to mislead a
// terminal. Every record planted outside names outsidePid.
type hostileRegistry struct {
	base, reg, out string
	fifos          []string
	want           map[string]scan.Kind // the locks a walk must find
}

func newHostileRegistry(t *testing.T) *hostileRegistry {
	t.Helper()
	h := &hostileRegistry{base: tempDir(t), want: map[string]scan.Kind{}}
	h.reg = filepath.Join(h.base, "reg")
	h.out = filepath.Join(h.base, "out")
	reg, out := h.reg, h.out
	lock := func(name string, k scan.Kind) string {
		p := filepath.Join(reg, name)
		h.want[p] = k
		return p
	}
	fifo := func(p string) {
		mkfifo(t, p)
		h.fifos = append(h.fifos, p)
	}

	// Outside: locks and records a walk must never see.
	writeFile(t, filepath.Join(out, "secret.lock"), "31337\n")
	writeFile(t, filepath.Join(out, "sub", "deep.lock"), "31337\n")
	writeFile(t, filepath.Join(out, "secret-a"), recA("", "31337", "x", "h1"))
	tokOut := "31337." + hex32 + ".1"
	writeFile(t, filepath.Join(out, "secret-b"), recB(tokOut, "31337"))
	mkdir(t, reg)

	// Links out of the registry.
	symlink(t, out, filepath.Join(reg, "escape"))          // a directory link: never entered
	symlink(t, "..", filepath.Join(reg, "up"))             // the parent: never entered
	symlink(t, ".", filepath.Join(reg, "dot"))             // itself: never entered
	symlink(t, "loopb", filepath.Join(reg, "loopa"))       // a loop
	symlink(t, "loopa", filepath.Join(reg, "loopb"))       //
	symlink(t, out, lock("escape.lock", scan.KindSymlink)) // a lock that is a link to a directory
	symlink(t, filepath.Join(out, "secret.lock"), lock("file.lock", scan.KindSymlink))
	symlink(t, "self.lock", lock("self.lock", scan.KindSymlink))
	// Records that are links to records outside.
	mkdir(t, lock("g.lock", scan.KindDir))
	symlink(t, filepath.Join(out, "secret-a"), filepath.Join(reg, "g.lock.holder"))
	mkdir(t, lock("h.lock", scan.KindDir))
	symlink(t, filepath.Join(out, "secret-b"), filepath.Join(reg, "h.lock", "holder."+tokOut))
	writeFile(t, lock("i.lock", scan.KindFile), "1\n")
	symlink(t, filepath.Join(out, "secret.lock"), filepath.Join(reg, "i.lock.dead.5.6"))

	// FIFOs: as a lock (never opened) and where records are read.
	fifo(lock("fifo.lock", scan.KindOther))
	writeFile(t, lock("j.lock", scan.KindFile), "1\n")
	fifo(filepath.Join(reg, "j.lock.dead.5.6"))
	mkdir(t, lock("k.lock", scan.KindDir))
	fifo(filepath.Join(reg, "k.lock", "holder."+tokB))
	mkdir(t, lock("l.lock", scan.KindDir))
	fifo(filepath.Join(reg, "l.lock.holder"))
	fifo(filepath.Join(reg, "fifo-not-a-lock"))
	if err := unix.Mknod(lock("sock.lock", scan.KindOther), unix.S_IFSOCK|0o600, 0); err != nil {
		t.Fatal(err)
	}

	// Giant sparse records: only MaxRecord bytes may be read.
	sparse := func(p string) {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Truncate(p, 100<<20); err != nil {
			t.Fatal(err)
		}
	}
	sparse(lock("sparse.lock", scan.KindFile))
	mkdir(t, lock("sparse-a.lock", scan.KindDir))
	sparse(filepath.Join(reg, "sparse-a.lock.holder"))

	// Binary records and hostile names.
	writeFile(t, lock("bin.lock", scan.KindFile), "\x00\xff\x1b[2J\x1b]0;pwned\x07\r\x9b31m")
	mkdir(t, lock("binb.lock", scan.KindDir))
	writeFile(t, filepath.Join(reg, "binb.lock", "holder.\x1b[31m"), "\x1b[31mEVIL\n")
	writeFile(t, lock("a\nb.lock", scan.KindFile), "4213\n")
	writeFile(t, lock("\x1b[31mred.lock", scan.KindFile), "4213\n")
	writeFile(t, lock("\u202egnp.lock", scan.KindFile), "4213\n")
	writeFile(t, lock("\xff\xfe.lock", scan.KindFile), "4213\n")
	writeFile(t, lock(" .lock", scan.KindFile), "4213\n")
	writeFile(t, lock("-rf.lock", scan.KindFile), "4213\n")

	// Deep nesting: 200 levels, a lock at the bottom.
	deep := reg
	for i := 0; i < 200; i++ {
		deep = filepath.Join(deep, "d")
	}
	mkdir(t, deep)
	writeFile(t, filepath.Join(deep, "bottom.lock"), "4213\n")
	h.want[filepath.Join(deep, "bottom.lock")] = scan.KindFile

	// Devices, where the file system allows making them (root, no nodev).
	if err := unix.Mknod(filepath.Join(reg, "dev.lock"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 5))); err == nil {
		h.want[filepath.Join(reg, "dev.lock")] = scan.KindOther
		writeFile(t, lock("m.lock", scan.KindFile), "1\n")
		if err := unix.Mknod(filepath.Join(reg, "m.lock.holder.releasing.5"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 5))); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("not testing device nodes: mknod: %v", err)
	}
	return h
}

// The release criterion: a hostile registry cannot make the walk leave it,
// follow a link, open a FIFO as a lock, hang, read a giant record whole, or
// panic.
func TestWalkHostileRegistry(t *testing.T) {
	h := newHostileRegistry(t)
	start := time.Now()
	res := walk(t, h.reg, nil, h.fifos...)
	if res.err != nil {
		t.Fatalf("walk error: %v", res.err)
	}
	for _, w := range res.warns {
		t.Errorf("unexpected warning: %v", w)
	}
	t.Logf("walked the hostile registry in %v", time.Since(start))
	got := byPath(t, res.locks, h.reg)
	var want []string
	for p := range h.want {
		want = append(want, p)
	}
	wantLocks(t, got, want...)
	for p, k := range h.want {
		if l := got[p]; l.Kind != k {
			t.Errorf("%q: Kind = %q, want %q", p, l.Kind, k)
		}
	}
	checkNothingFromOutside(t, res.locks, h)

	lk := func(name string) *scan.Lock { return got[filepath.Join(h.reg, name)] }
	for _, name := range []string{"escape.lock", "file.lock", "self.lock", "fifo.lock", "sock.lock", "dev.lock"} {
		l := lk(name)
		if l == nil {
			continue // dev.lock where devices cannot be made
		}
		if len(l.Holders) != 0 || len(l.Others) != 0 || l.Format != scan.FormatUnrecognized {
			t.Errorf("%s: Holders %+v, Others %q, Format %q: it was read, want it left unopened", name, l.Holders, l.Others, l.Format)
		}
	}
	// Records that are links to records outside: refused, not followed.
	for _, name := range []string{"g.lock", "h.lock"} {
		l := lk(name)
		if len(l.Holders) != 1 || l.Holders[0].Holder != nil || !errors.Is(l.Holders[0].Err, unix.ELOOP) {
			t.Errorf("%s: Holders = %+v, want one refused with ELOOP", name, l.Holders)
		}
	}
	if cs := lk("i.lock").Claims; len(cs) != 1 || cs[0].Record.Holder != nil || !errors.Is(cs[0].Record.Err, unix.ELOOP) {
		t.Errorf("i.lock: Claims = %+v, want one refused with ELOOP", cs)
	}
	// FIFOs and devices where records belong: refused as not regular.
	if cs := lk("j.lock").Claims; len(cs) != 1 || !errors.Is(cs[0].Record.Err, fsx.ErrNotRegular) {
		t.Errorf("j.lock: Claims = %+v, want the FIFO claim refused as not regular", cs)
	}
	for _, name := range []string{"k.lock", "l.lock"} {
		if l := lk(name); len(l.Holders) != 1 || !errors.Is(l.Holders[0].Err, fsx.ErrNotRegular) {
			t.Errorf("%s: Holders = %+v, want the FIFO record refused as not regular", name, l.Holders)
		}
	}
	if l := lk("m.lock"); l != nil {
		if len(l.Claims) != 1 || !errors.Is(l.Claims[0].Record.Err, fsx.ErrNotRegular) || len(l.Claims[0].Record.Raw) != 0 {
			t.Errorf("m.lock: Claims = %+v, want the device claim refused as not regular", l.Claims)
		}
	}
	// Sparse giants: at most MaxRecord bytes, reported malformed.
	for _, name := range []string{"sparse.lock", "sparse-a.lock"} {
		l := lk(name)
		if len(l.Holders) != 1 {
			t.Errorf("%s: %d holder records, want 1", name, len(l.Holders))
			continue
		}
		r := l.Holders[0]
		if len(r.Raw) > scan.MaxRecord || r.Holder != nil {
			t.Errorf("%s: read %d bytes, holder %+v, want at most %d and none", name, len(r.Raw), r.Holder, scan.MaxRecord)
		}
		wantFormatError(t, name, r.Err)
		if r.Info.Size != 100<<20 {
			t.Errorf("%s: record Info.Size = %d, want %d", name, r.Info.Size, 100<<20)
		}
	}
	// Binary records: malformed, with error text safe to print.
	for _, r := range []scan.Record{lk("bin.lock").Holders[0], lk("binb.lock").Holders[0]} {
		wantFormatError(t, r.File, r.Err)
		if r.Err != nil && strings.ContainsAny(r.Err.Error(), "\x1b\x07\r\x00") {
			t.Errorf("%q: error text %q carries the record's control bytes", r.File, r.Err)
		}
	}
	// Hostile names are reported byte for byte.
	for _, name := range []string{"a\nb.lock", "\x1b[31mred.lock", "\u202egnp.lock", "\xff\xfe.lock", " .lock", "-rf.lock"} {
		if l := lk(name); l.Name != name || holderPid(t, l, 0) != 4213 {
			t.Errorf("%q: Name %q", name, l.Name)
		}
	}
}

// checkNothingFromOutside asserts that no lock, record or claim in locks
// comes from outside the registry.
func checkNothingFromOutside(t *testing.T, locks []*scan.Lock, h *hostileRegistry) {
	t.Helper()
	check := func(l *scan.Lock, r scan.Record) {
		if r.Holder != nil && r.Holder.Pid == outsidePid {
			t.Errorf("%q: record %q was read from outside the registry (pid %d)", l.Path, r.File, outsidePid)
		}
		if strings.Contains(string(r.Raw), "31337") {
			t.Errorf("%q: record %q holds bytes from outside the registry: %q", l.Path, r.File, r.Raw)
		}
	}
	for _, l := range locks {
		if !strings.HasPrefix(l.Path, h.reg+"/") || strings.HasPrefix(l.Path, h.out) || strings.Contains(l.Path, "secret") {
			t.Errorf("lock %q is outside the registry %q", l.Path, h.reg)
		}
		for _, r := range l.Holders {
			check(l, r)
		}
		for _, c := range l.Claims {
			check(l, c.Record)
		}
	}
}

// A FIFO named like a lock is reported without being opened at all: an
// inotify watch on it sees no open.
func TestWalkFIFOLockNeverOpened(t *testing.T) {
	reg := tempDir(t)
	p := filepath.Join(reg, "x.lock")
	mkfifo(t, p)
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(ifd)
	if _, err := unix.InotifyAddWatch(ifd, p, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
		t.Skipf("inotify_add_watch: %v", err)
	}
	res := walk(t, reg, nil, p)
	got := byPath(t, res.locks, reg)
	wantLocks(t, got, p)
	if l := got[p]; l.Kind != scan.KindOther || len(l.Holders) != 0 || l.Err != nil {
		t.Errorf("Kind %q Holders %+v Err %v, want other, unread", l.Kind, l.Holders, l.Err)
	}
	buf := make([]byte, 4096)
	if n, err := unix.Read(ifd, buf); n > 0 {
		t.Errorf("the FIFO lock was opened during the walk (%d bytes of inotify events)", n)
	} else if err != unix.EAGAIN {
		t.Errorf("reading inotify events: %v", err)
	}

	// The probe works: opening the FIFO does produce an event.
	if fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
		unix.Close(fd)
	}
	if n, _ := unix.Read(ifd, buf); n <= 0 {
		t.Errorf("inotify saw no open of the FIFO even when it was opened: the probe proves nothing")
	}
}

// Symbolic links never lead out of the registry, whatever their name.
func TestWalkNeverFollowsDirectoryLinks(t *testing.T) {
	base := tempDir(t)
	reg, out := filepath.Join(base, "reg"), filepath.Join(base, "out")
	writeFile(t, filepath.Join(out, "secret.lock"), "31337\n")
	writeFile(t, filepath.Join(reg, "inside.lock"), "4213\n")
	symlink(t, out, filepath.Join(reg, "escape"))
	symlink(t, "..", filepath.Join(reg, "up"))
	res := walk(t, reg, nil)
	wantLocks(t, byPath(t, res.locks, reg), filepath.Join(reg, "inside.lock"))
}

func TestWalkDeepNesting(t *testing.T) {
	reg := tempDir(t)
	// A lock in a directory MaxDepth levels down is found; one level more
	// is not walked, with a warning.
	d := reg
	for i := 0; i < scan.MaxDepth; i++ {
		d = filepath.Join(d, "d")
	}
	writeFile(t, filepath.Join(d, "found.lock"), "4213\n")
	writeFile(t, filepath.Join(d, "d", "too-deep.lock"), "4213\n")
	res := walk(t, reg, nil)
	if res.err != nil {
		t.Fatal(res.err)
	}
	got := byPath(t, res.locks, reg)
	wantLocks(t, got, filepath.Join(d, "found.lock"))
	if len(res.warns) != 1 || !strings.Contains(res.warns[0].Error(), "deeper than") {
		t.Errorf("warnings = %v, want one about the depth limit", res.warns)
	}
}

// The walker warns about a directory it cannot open and walks on. Root
// opens a mode 000 directory anyway, so as root the test re-runs itself as
// user nobody, with LOCKCTL_TEST_UNREADABLE naming the registry.
func TestWalkUnreadableDirectoryWarns(t *testing.T) {
	const role = "LOCKCTL_TEST_UNREADABLE"
	if reg := os.Getenv(role); reg != "" {
		checkUnreadableWalk(t, reg)
		return
	}
	base := tempDir(t)
	reg := filepath.Join(base, "reg")
	locked := filepath.Join(reg, "locked")
	writeFile(t, filepath.Join(locked, "hidden.lock"), "1\n")
	writeFile(t, filepath.Join(reg, "seen.lock"), "4213\n")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	if os.Geteuid() != 0 {
		checkUnreadableWalk(t, reg)
		return
	}
	// Let nobody reach the registry and run a copy of this test binary.
	for d := base; d != "/tmp" && d != "/" && d != "."; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o005); err != nil {
				t.Skipf("cannot open %q to user nobody: %v", d, err)
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Skip(err)
	}
	cp := filepath.Join(base, "scan.test")
	if err := os.WriteFile(cp, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cp, "-test.run=^TestWalkUnreadableDirectoryWarns$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), role+"="+reg)
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Skipf("cannot run the test as user nobody: %v", err)
		}
		t.Fatalf("as user nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestWalkUnreadableDirectoryWarns") {
		t.Fatalf("as user nobody, the test did not pass:\n%s", out)
	}
	t.Logf("as user nobody:\n%s", out)
}

func checkUnreadableWalk(t *testing.T, reg string) {
	t.Helper()
	res := walk(t, reg, nil)
	if res.err != nil {
		t.Fatal(res.err)
	}
	wantLocks(t, byPath(t, res.locks, reg), filepath.Join(reg, "seen.lock"))
	if len(res.warns) != 1 || !errors.Is(res.warns[0], fs.ErrPermission) {
		t.Errorf("warnings = %v, want one permission error", res.warns)
	}
}

func TestWalkRootErrors(t *testing.T) {
	base := tempDir(t)
	m, _ := scan.NewMatcher(nil)
	if _, err := scan.ResolveRoot(filepath.Join(base, "missing", "x.lock"), m); err == nil {
		t.Error("ResolveRoot(missing parent) = nil error, want one")
	}
	// A root that vanished between ResolveRoot and Walk.
	p := filepath.Join(base, "reg")
	mkdir(t, p)
	r, err := scan.ResolveRoot(p, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	w := scan.Walker{Match: m, Found: func(l *scan.Lock) { t.Errorf("found %q in a vanished root", l.Path) }}
	if err := w.Walk(r); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Walk(vanished root) = %v, want ErrNotExist", err)
	}
}

// TestWalkSymlinkSwappedIn races the walker: entries it listed as a
// directory or a regular file are swapped, atomically (RENAME_EXCHANGE),
// for symbolic links out of the registry and back, while it walks. Listing
// never follows a link, so only the O_NOFOLLOW of the open that comes after
// the listing keeps the walk inside: without it, this test sees records
// from outside within a few hundred walks.
func TestWalkSymlinkSwappedIn(t *testing.T) {
	base := tempDir(t)
	reg, out := filepath.Join(base, "reg"), filepath.Join(base, "out")
	tokOut := "31337." + hex32 + ".1"
	writeFile(t, filepath.Join(out, "secret.lock"), "31337\n")
	writeFile(t, filepath.Join(out, "evil.lock", "holder."+tokOut), recB(tokOut, "31337"))
	writeFile(t, filepath.Join(out, "secret-a"), recA("", "31337", "x", "h1"))

	type pair struct{ a, b string }
	var pairs []pair
	swap := func(real, target string) {
		symlink(t, target, real+".swap")
		pairs = append(pairs, pair{real, real + ".swap"})
	}
	mkdir(t, filepath.Join(reg, "sub")) // a subdirectory to walk
	writeFile(t, filepath.Join(reg, "sub", "in.lock"), "4213\n")
	swap(filepath.Join(reg, "sub"), out)
	mkdir(t, filepath.Join(reg, "x.lock")) // a lock directory to read
	swap(filepath.Join(reg, "x.lock"), filepath.Join(out, "evil.lock"))
	writeFile(t, filepath.Join(reg, "y.lock"), "4213\n") // a pid file to read
	swap(filepath.Join(reg, "y.lock"), filepath.Join(out, "secret.lock"))
	mkdir(t, filepath.Join(reg, "z.lock")) // a generation A holder to read
	writeFile(t, filepath.Join(reg, "z.lock.holder"), recA("", "4213", "x", "h1"))
	swap(filepath.Join(reg, "z.lock.holder"), filepath.Join(out, "secret-a"))

	for _, p := range pairs {
		err := unix.Renameat2(unix.AT_FDCWD, p.a, unix.AT_FDCWD, p.b, unix.RENAME_EXCHANGE)
		if err != nil {
			t.Skipf("no RENAME_EXCHANGE here: %v", err)
		}
	}
	stop := make(chan struct{})
	swapped := make(chan int)
	go func() {
		n := 0
		defer func() { swapped <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, p := range pairs {
				if unix.Renameat2(unix.AT_FDCWD, p.a, unix.AT_FDCWD, p.b, unix.RENAME_EXCHANGE) == nil {
					n++
				}
			}
		}
	}()
	h := &hostileRegistry{reg: reg, out: out}
	walks := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && !t.Failed(); walks++ {
		res := walk(t, reg, nil)
		if res.err != nil {
			t.Fatal(res.err)
		}
		byPath(t, res.locks, reg)
		checkNothingFromOutside(t, res.locks, h)
	}
	close(stop)
	n := <-swapped
	t.Logf("%d walks during %d swaps", walks, n)
	if n < 100 {
		t.Errorf("only %d swaps happened: the race was not run", n)
	}
}

// A generation B holder file named "holder." carries no token, so nothing
// binds the record to its name: it must be malformed, not trusted.
func TestWalkHolderWithoutToken(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "x.lock")
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := "token 42." + strings.Repeat("ab", 16) + ".1\npid 42\ncommand c\nhost h\n"
	if err := os.WriteFile(filepath.Join(lock, "holder."), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	m, _ := scan.NewMatcher(nil)
	var got []*scan.Lock
	w := scan.Walker{Match: m, Found: func(l *scan.Lock) { got = append(got, l) }}
	r, err := scan.ResolveRoot(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Walk(r); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Holders) != 1 {
		t.Fatalf("Walk found %d locks, want 1 with 1 holder record", len(got))
	}
	var fe *scan.FormatError
	if h := got[0].Holders[0]; h.Holder != nil || !errors.As(h.Err, &fe) {
		t.Fatalf("holder. = %+v, %v; want a malformed record", h.Holder, h.Err)
	}
}

// Concurrency must not change what is found: a walk with workers and a
// walk without agree, lock for lock, on a large generated tree.
func TestConcurrentWalkAgrees(t *testing.T) {
	root := t.TempDir()
	n := 0
	for a := 0; a < 12; a++ {
		for b := 0; b < 12; b++ {
			dir := filepath.Join(root, fmt.Sprintf("a%d", a), fmt.Sprintf("b%d", b))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for c := 0; c < 10; c++ {
				name := filepath.Join(dir, fmt.Sprintf("f%d", c))
				switch c % 5 {
				case 0:
					name += ".lock"
					n++
				case 1:
					name = filepath.Join(dir, fmt.Sprintf("LCK..tty%d", c))
					n++
				}
				if err := os.WriteFile(name, []byte(fmt.Sprintf("%d\n", 100+c)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(filepath.Join(dir, "d.lock"), 0o755); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	walk := func(workers int) map[string]string {
		m, _ := scan.NewMatcher(nil)
		got := map[string]string{}
		w := &scan.Walker{Match: m, Workers: workers, Found: func(l *scan.Lock) {
			if _, dup := got[l.Path]; dup {
				t.Errorf("workers=%d: %s found twice", workers, l.Path)
			}
			got[l.Path] = fmt.Sprintf("%s %s %d", l.Kind, l.Format, len(l.Holders))
		}}
		r, err := scan.ResolveRoot(root, m)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Walk(r); err != nil {
			t.Fatal(err)
		}
		if e := w.Entries.Load(); e < int64(n) {
			t.Errorf("workers=%d: Entries = %d, want at least %d", workers, e, n)
		}
		return got
	}
	seq := walk(1)
	if len(seq) != n {
		t.Fatalf("sequential walk found %d locks, want %d", len(seq), n)
	}
	for i := 0; i < 5; i++ {
		if par := walk(8); !reflect.DeepEqual(par, seq) {
			t.Fatalf("concurrent walk found %d locks, sequential %d; they differ", len(par), len(seq))
		}
	}
}

// A record claimed out of its lock directory after the registry was listed
// (a release or break under way) must still be seen, as a side file: the
// walk reads a holder-less lock directory before it settles its side files.
// Found by the model of the protocol (docs/model.md, finding 1): without
// this, doctor --fix saw an empty directory beside a stale claim and
// removed a releasing holder's lock.
func TestWalkSeesRecordClaimedMidWalk(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "x.lock")
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	tok := "42." + strings.Repeat("ab", 16) + ".1"
	rec := "token " + tok + "\npid 42\ncommand c\nhost h\n"
	if err := os.WriteFile(filepath.Join(lock, "holder."+tok), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	m, _ := scan.NewMatcher(nil)
	var got []*scan.Lock
	w := &scan.Walker{Match: m, Found: func(l *scan.Lock) { got = append(got, l) }}
	scan.SetBeforeLockRead(w, func(name string) {
		// The holder releases now: its record leaves the directory.
		if err := os.Rename(filepath.Join(lock, "holder."+tok), filepath.Join(dir, "x.lock.rel."+tok)); err != nil {
			t.Error(err)
		}
	})
	r, err := scan.ResolveRoot(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Walk(r); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("Walk found %d locks, want 1", len(got))
	}
	if l := got[0]; len(l.Holders) != 0 || len(l.Claims) != 1 || l.Claims[0].Kind != scan.ClaimRelease {
		t.Fatalf("Walk = %d holders, claims %+v; want the record seen as release staging", len(l.Holders), l.Claims)
	}
}

// TestWalkKnownKernelLocks: dpkg's lock files by their place, and
// Firefox's .parentlock in a profile, are kernel-lock files of their
// producer, found with no --name; a .parentlock elsewhere is no one's and
// not reported.
func TestWalkKnownKernelLocks(t *testing.T) {
	reg := tempDir(t)
	mkdir(t, filepath.Join(reg, "root", "var", "lib", "dpkg"))
	writeFile(t, filepath.Join(reg, "root", "var", "lib", "dpkg", "lock-frontend"), "")
	mkdir(t, filepath.Join(reg, "profile"))
	writeFile(t, filepath.Join(reg, "profile", "prefs.js"), "")
	writeFile(t, filepath.Join(reg, "profile", ".parentlock"), "")
	mkdir(t, filepath.Join(reg, "other"))
	writeFile(t, filepath.Join(reg, "other", ".parentlock"), "")

	got := byPath(t, walk(t, reg, nil).locks, reg)
	wantLocks(t, got, filepath.Join(reg, "root", "var", "lib", "dpkg", "lock-frontend"), filepath.Join(reg, "profile", ".parentlock"))
	for p, want := range map[string]string{"root/var/lib/dpkg/lock-frontend": "dpkg", "profile/.parentlock": "firefox"} {
		if l := got[filepath.Join(reg, p)]; l.KernelLock != want || l.Producer != want {
			t.Errorf("%s: kernel lock of %q, producer %q, want %q", p, l.KernelLock, l.Producer, want)
		}
	}
}

// TestWalkEmptyGitLock: git's lock files are empty while git works under
// them (a commit in its editor), and an empty file is also what a kernel
// lock leaves: the empty index.lock must stay git's, judged by git's rule
// (a git process working in the repository holds it), not become a plain
// owner-less file.
func TestWalkEmptyGitLock(t *testing.T) {
	reg := tempDir(t)
	git := filepath.Join(reg, "repo", ".git")
	mkdir(t, filepath.Join(reg, "repo"))
	mkdir(t, git)
	mkdir(t, filepath.Join(git, "objects"))
	writeFile(t, filepath.Join(git, "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(git, "index.lock"), "")
	got := byPath(t, walk(t, reg, nil).locks, reg)
	l := got[filepath.Join(git, "index.lock")]
	if l == nil || l.Producer != scan.ProducerGit || l.Repo == nil || l.KernelLock != "" {
		t.Fatalf("empty .git/index.lock: %+v, want git's, with its repository, and no kernel lock", l)
	}
}

// TestWalkSeesRecordsClaimedMidWalkInOneDirectory: several lock
// directories in one directory, each released (its record moved out beside
// it) between the listing of the directory and the reading of that lock:
// every record is seen, as release staging. The one listing again that
// serves them all must come after the last of them was read.
func TestWalkSeesRecordsClaimedMidWalkInOneDirectory(t *testing.T) {
	dir := t.TempDir()
	tok := "42." + strings.Repeat("ab", 16) + ".1"
	rec := "token " + tok + "\npid 42\ncommand c\nhost h\n"
	names := []string{"a.lock", "b.lock", "c.lock"}
	for _, n := range names {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n, "holder."+tok), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := scan.NewMatcher(nil)
	var got []*scan.Lock
	w := &scan.Walker{Match: m, Found: func(l *scan.Lock) { got = append(got, l) }}
	scan.SetBeforeLockRead(w, func(name string) {
		if err := os.Rename(filepath.Join(dir, name, "holder."+tok), filepath.Join(dir, name+".rel."+tok)); err != nil {
			t.Error(err)
		}
	})
	r, err := scan.ResolveRoot(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Walk(r); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(names) {
		t.Fatalf("Walk found %d locks, want %d", len(got), len(names))
	}
	for _, l := range got {
		if len(l.Holders) != 0 || len(l.Claims) != 1 || l.Claims[0].Kind != scan.ClaimRelease {
			t.Errorf("%s: %d holders, claims %+v; want the record seen as release staging", l.Name, len(l.Holders), l.Claims)
		}
	}
}

// TestWalkBuildNamesItsNamespace: a build killed before its record was
// written is an empty directory whose name alone says who made it; lockctl
// ends that name with the maker's pid namespace, as it does a break claim,
// so that a reader in another namespace never takes the maker's pid for
// one of its own (a host reader would see pid 14, ksoftirqd, running for
// ever). Older names, without it, still read.
func TestWalkBuildNamesItsNamespace(t *testing.T) {
	reg := tempDir(t)
	tok := "48." + strings.Repeat("12", 16) + ".1"
	mkdir(t, filepath.Join(reg, "x.lock.new."+tok+".14.ns4026532000"))
	mkdir(t, filepath.Join(reg, "y.lock.new."+tok+".15"))
	got := byPath(t, walk(t, reg, nil).locks, reg)
	for name, want := range map[string]struct {
		by int64
		ns string
	}{"x.lock": {14, "pid:[4026532000]"}, "y.lock": {15, ""}} {
		l := got[filepath.Join(reg, name)]
		if l == nil || len(l.Claims) != 1 {
			t.Fatalf("%s: %+v, want one build beside it", name, l)
		}
		if c := l.Claims[0]; c.Kind != scan.ClaimBuild || !c.Maker || c.By != want.by || c.NS != want.ns {
			t.Errorf("%s: build by %d (maker %v) of namespace %q, want %d of %q", name, c.By, c.Maker, c.NS, want.by, want.ns)
		}
	}
}

// A reservation claimed out of its lock (an adoption or a release --token
// under way) was claimed by a process of any pid namespace: the worker in a
// container, the dispatcher anywhere. The claim's maker is judged as of no
// stated namespace, not of the reserver's; a release claim of an ordinary
// record keeps its record's.
func TestWalkReservationClaimNamesNoNamespace(t *testing.T) {
	reg := tempDir(t)
	tok := "48." + strings.Repeat("12", 16) + ".1"
	rec := func(magic, extra string) string {
		return magic + "\ntoken " + tok + "\npid 48\nstart 1\nboot b\npidns pid:[4026531836]\nhost h\ncommand c\nacquired 2026-11-29T12:00:00Z\n" + extra
	}
	mkdir(t, filepath.Join(reg, "r.lock"))
	writeFile(t, filepath.Join(reg, "r.lock.rel."+tok+".77"), rec(scan.ReserveMagic, "reserved-until 5\ntimens 0\n"))
	mkdir(t, filepath.Join(reg, "p.lock"))
	writeFile(t, filepath.Join(reg, "p.lock.rel."+tok+".77"), rec(scan.LockctlMagic, ""))
	got := byPath(t, walk(t, reg, nil).locks, reg)
	for name, ns := range map[string]string{"r.lock": "", "p.lock": "pid:[4026531836]"} {
		l := got[filepath.Join(reg, name)]
		if l == nil || len(l.Claims) != 1 {
			t.Fatalf("%s: %+v, want one claim beside it", name, l)
		}
		if c := l.Claims[0]; c.Kind != scan.ClaimRelease || c.By != 77 || c.NS != ns {
			t.Errorf("%s: %s claim by %d of namespace %q, want release by 77 of %q", name, c.Kind, c.By, c.NS, ns)
		}
	}
}

// TestWalkJudgeBesideFound: with Judge set, every lock is judged once by
// the goroutine that read it and handed, with its answer, to FoundJudged,
// never concurrently (doctor judges side by side, reports one at a time).
func TestWalkJudgeBesideFound(t *testing.T) {
	reg := tempDir(t)
	for i := range 40 {
		dir := filepath.Join(reg, fmt.Sprintf("d%d", i%8))
		mkdir(t, dir)
		writeFile(t, filepath.Join(dir, fmt.Sprintf("job%d.lock", i)), fmt.Sprintf("%d\n", 1000+i))
	}
	m, err := scan.NewMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := scan.ResolveRoot(reg, m)
	if err != nil {
		t.Fatal(err)
	}
	var judged atomic.Int64
	var inside atomic.Int32
	got := map[string]string{}
	w := scan.Walker{
		Match:   m,
		Workers: 4,
		Judge: func(l *scan.Lock) any {
			judged.Add(1)
			return "judged " + l.Name
		},
		FoundJudged: func(l *scan.Lock, v any) {
			if inside.Add(1) != 1 {
				t.Error("FoundJudged called concurrently")
			}
			got[l.Path] = v.(string)
			inside.Add(-1)
		},
		Found: func(l *scan.Lock) { t.Errorf("Found called for %s with Judge set", l.Path) },
	}
	if err := w.Walk(r); err != nil {
		t.Fatal(err)
	}
	if len(got) != 40 || judged.Load() != 40 {
		t.Fatalf("%d locks handed on, %d judged; want 40 each", len(got), judged.Load())
	}
	for p, v := range got {
		if v != "judged "+filepath.Base(p) {
			t.Errorf("%s handed on with %q", p, v)
		}
	}
}

// TestWalkNamesEachLockOnce: a lock gone but for a claim beside it and its
// producer's temporary (X's .X0-lock.dead.<pid>.<n> and .tX0-lock, shadow's
// passwd.lock.dead.<pid>.<n> and passwd.<pid>) is one lock, its temporary
// with it. The side files' orphan and the temporary's own orphan were two
// locks of one path, hidden by doctor's set of paths met (review).
func TestWalkNamesEachLockOnce(t *testing.T) {
	dir := t.TempDir()
	for name, raw := range map[string]string{
		".tX0-lock": "    999999\n", ".X0-lock.dead.1.2": "    999999\n",
		"passwd.999999": "999999\x00", "passwd.lock.dead.1.2": "999999\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	locks := byPath(t, walk(t, dir, nil).locks, dir)
	for lock, temp := range map[string]string{".X0-lock": ".tX0-lock", "passwd.lock": "passwd.999999"} {
		l := locks[filepath.Join(dir, lock)]
		switch {
		case l == nil:
			t.Errorf("%s: not found (found %d locks)", lock, len(locks))
		case len(l.Temps) != 1 || l.Temps[0].Name != temp:
			t.Errorf("%s: temporaries %+v, want %s", lock, l.Temps, temp)
		}
	}
}

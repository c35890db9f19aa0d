//go:build linux

package fsx

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func openDir(t *testing.T, p string) Dir {
	t.Helper()
	fd, err := OpenRoot(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fd.Close)
	return fd
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rename(2) of a directory silently replaces an empty directory at the
// target; RenameNoReplace exists so that a break never does.
func TestRenameNoReplaceRefusesEmptyDir(t *testing.T) {
	d := t.TempDir()
	fd := openDir(t, d)
	for _, n := range []string{"old", "target", "plain-old", "plain-target"} {
		if err := os.Mkdir(filepath.Join(d, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(d, "old", "marker"), "x")

	err := fd.RenameNoReplace("old", fd, "target")
	if errors.Is(err, ErrNoReplaceUnsupported) {
		t.Skipf("%s has no RENAME_NOREPLACE: %v", d, err)
	}
	if !errors.Is(err, fs.ErrExist) || !errors.Is(err, unix.EEXIST) {
		t.Fatalf("RenameNoReplace(dir onto empty dir) = %v, want EEXIST", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "rename" || pe.Path != filepath.Join(d, "old") {
		t.Errorf("error = %#v, want *fs.PathError{Op: rename, Path: %q}", err, filepath.Join(d, "old"))
	}
	if _, err := os.Stat(filepath.Join(d, "old", "marker")); err != nil {
		t.Errorf("source disturbed: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(d, "target")); len(ents) != 0 {
		t.Errorf("target replaced: it holds %v", ents)
	}

	// The hazard is real here: plain rename(2) replaces the empty directory.
	if err := unix.Renameat(fd.fd, "plain-old", fd.fd, "plain-target"); err != nil {
		t.Fatalf("plain renameat: %v", err)
	}
	if _, err := os.Stat(filepath.Join(d, "plain-old")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("plain rename(2) did not replace the empty directory (%v): the test proves nothing", err)
	}
}

func TestRenameNoReplaceRefusesFile(t *testing.T) {
	d := t.TempDir()
	fd := openDir(t, d)
	write(t, filepath.Join(d, "claim"), "4213\n")
	write(t, filepath.Join(d, "x.lock.holder"), "1\n")
	err := fd.RenameNoReplace("claim", fd, "x.lock.holder")
	if errors.Is(err, ErrNoReplaceUnsupported) {
		t.Skipf("no RENAME_NOREPLACE: %v", err)
	}
	if !errors.Is(err, unix.EEXIST) {
		t.Fatalf("RenameNoReplace(file onto file) = %v, want EEXIST", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "x.lock.holder")); string(b) != "1\n" {
		t.Errorf("target content = %q, want it untouched", b)
	}
	// A file onto an empty directory, and a directory onto a file.
	if err := os.Mkdir(filepath.Join(d, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fd.RenameNoReplace("claim", fd, "dir"); !errors.Is(err, unix.EEXIST) {
		t.Errorf("RenameNoReplace(file onto dir) = %v, want EEXIST", err)
	}
	if err := fd.RenameNoReplace("dir", fd, "claim"); !errors.Is(err, unix.EEXIST) {
		t.Errorf("RenameNoReplace(dir onto file) = %v, want EEXIST", err)
	}
	// Nothing at the target: the rename happens.
	if err := fd.RenameNoReplace("claim", fd, "claim.dead.1.2"); err != nil {
		t.Fatalf("RenameNoReplace to a free name: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "claim.dead.1.2")); string(b) != "4213\n" {
		t.Errorf("renamed content = %q", b)
	}
	if err := fd.RenameNoReplace("missing", fd, "other"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RenameNoReplace(missing) = %v, want ErrNotExist", err)
	}
}

func TestLinkRefusesExistingTarget(t *testing.T) {
	d := t.TempDir()
	fd := openDir(t, d)
	write(t, filepath.Join(d, "claim"), "4213\n")
	write(t, filepath.Join(d, "x.lock.holder"), "1\n")
	err := fd.Link("claim", fd, "x.lock.holder")
	if !errors.Is(err, unix.EEXIST) {
		t.Fatalf("Link onto an existing file = %v, want EEXIST", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "link" || pe.Path != filepath.Join(d, "x.lock.holder") {
		t.Errorf("error = %#v, want *fs.PathError{Op: link, Path: the target}", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "x.lock.holder")); string(b) != "1\n" {
		t.Errorf("target content = %q, want it untouched", b)
	}
	if err := os.Mkdir(filepath.Join(d, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fd.Link("claim", fd, "empty"); !errors.Is(err, unix.EEXIST) {
		t.Errorf("Link onto an empty directory = %v, want EEXIST", err)
	}
	if err := fd.Link("claim", fd, "restored"); err != nil {
		t.Fatalf("Link to a free name: %v", err)
	}
	a, _ := os.Stat(filepath.Join(d, "claim"))
	b, _ := os.Stat(filepath.Join(d, "restored"))
	if !os.SameFile(a, b) {
		t.Error("Link made a copy, not a link")
	}
	// A symbolic link is linked as itself, never followed.
	if err := os.Symlink("claim", filepath.Join(d, "sym")); err != nil {
		t.Fatal(err)
	}
	if err := fd.Link("sym", fd, "sym2"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(d, "sym2")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Link(symlink) made %v (%v), want a link to the symlink itself", fi, err)
	}
}

// readFileAt runs ReadFile in a goroutine and fails the test if it does
// not return promptly; a blocked FIFO open is released by opening its
// write end.
func readFileAt(t *testing.T, fd Dir, name string, max int) ([]byte, Stat, bool, error) {
	t.Helper()
	type result struct {
		data      []byte
		st        Stat
		truncated bool
		err       error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.data, r.st, r.truncated, r.err = fd.ReadFile(name, max)
		done <- r
	}()
	select {
	case r := <-done:
		return r.data, r.st, r.truncated, r.err
	case <-time.After(10 * time.Second):
		if w, err := unix.Open(fd.Join(name), unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			unix.Close(w)
		}
		t.Fatalf("ReadFile(%q) did not return within 10s: it blocked", name)
		return nil, Stat{}, false, nil
	}
}

func TestReadFileFIFO(t *testing.T) {
	d := t.TempDir()
	fd := openDir(t, d)
	if err := unix.Mkfifo(filepath.Join(d, "x.lock"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	data, st, _, err := readFileAt(t, fd, "x.lock", 4096)
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("ReadFile(FIFO) = %q, %v, want ErrNotRegular", data, err)
	}
	if st.Mode&fs.ModeNamedPipe == 0 {
		t.Errorf("Stat.Mode = %v, want the FIFO's", st.Mode)
	}
	if len(data) != 0 {
		t.Errorf("data = %q, want none", data)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("ReadFile(FIFO) took %v", el)
	}
	// A FIFO with a writer holding it open and data in it: still refused,
	// and nothing is consumed from it.
	w, err := unix.Open(filepath.Join(d, "x.lock"), unix.O_RDWR|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(w)
	if _, err := unix.Write(w, []byte("4213\n")); err != nil {
		t.Fatal(err)
	}
	if data, _, _, err := readFileAt(t, fd, "x.lock", 4096); !errors.Is(err, ErrNotRegular) || len(data) != 0 {
		t.Errorf("ReadFile(FIFO with data) = %q, %v, want nothing, ErrNotRegular", data, err)
	}
	buf := make([]byte, 16)
	if n, _ := unix.Read(w, buf); string(buf[:n]) != "4213\n" {
		t.Errorf("FIFO content after ReadFile = %q, want it unconsumed", buf[:n])
	}
}

func TestReadFileRefusesNonRegular(t *testing.T) {
	d := t.TempDir()
	fd := openDir(t, d)
	if err := os.Mkdir(filepath.Join(d, "dir.lock"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := readFileAt(t, fd, "dir.lock", 4096); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(directory) = %v, want ErrNotRegular", err)
	}
	if err := unix.Mknod(filepath.Join(d, "sock.lock"), unix.S_IFSOCK|0o600, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := readFileAt(t, fd, "sock.lock", 4096); err == nil {
		t.Errorf("ReadFile(socket) = nil error, want one")
	}
	// /dev/zero would read forever without the regular-file check and the
	// bound; the check refuses it before a byte is read.
	if err := unix.Mknod(filepath.Join(d, "zero.lock"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 5))); err != nil {
		t.Logf("not testing a device: mknod: %v", err)
		return
	}
	data, _, _, err := readFileAt(t, fd, "zero.lock", 4096)
	if !errors.Is(err, ErrNotRegular) || len(data) != 0 {
		t.Errorf("ReadFile(/dev/zero node) = %d bytes, %v, want none, ErrNotRegular", len(data), err)
	}
}

func TestReadFileSymlink(t *testing.T) {
	d := t.TempDir()
	fd := openDir(t, d)
	write(t, filepath.Join(d, "target"), "31337\n")
	if err := os.Symlink("target", filepath.Join(d, "x.lock")); err != nil {
		t.Fatal(err)
	}
	data, _, _, err := readFileAt(t, fd, "x.lock", 4096)
	if !errors.Is(err, unix.ELOOP) {
		t.Fatalf("ReadFile(symlink) = %q, %v, want ELOOP", data, err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != filepath.Join(d, "x.lock") {
		t.Errorf("error = %#v, want a *fs.PathError naming %q", err, filepath.Join(d, "x.lock"))
	}
	if len(data) != 0 {
		t.Errorf("data = %q, want none", data)
	}
}

func TestReadFileBounds(t *testing.T) {
	d := t.TempDir()
	fd := openDir(t, d)
	write(t, filepath.Join(d, "exact"), strings.Repeat("x", 16))
	write(t, filepath.Join(d, "over"), strings.Repeat("x", 17))
	write(t, filepath.Join(d, "empty"), "")
	for _, tc := range []struct {
		name      string
		n         int
		truncated bool
	}{{"exact", 16, false}, {"over", 16, true}, {"empty", 0, false}} {
		data, st, truncated, err := readFileAt(t, fd, tc.name, 16)
		if err != nil || len(data) != tc.n || truncated != tc.truncated {
			t.Errorf("ReadFile(%s, 16) = %d bytes, truncated %v, %v, want %d, %v, nil", tc.name, len(data), truncated, err, tc.n, tc.truncated)
		}
		if !st.Mode.IsRegular() || st.Ino == 0 {
			t.Errorf("%s: Stat = %+v, want the file's", tc.name, st)
		}
	}
	// A sparse 100 MB file is read no further than the bound.
	big := filepath.Join(d, "big")
	write(t, big, "")
	if err := os.Truncate(big, 100<<20); err != nil {
		t.Fatal(err)
	}
	data, st, truncated, err := readFileAt(t, fd, "big", 4096)
	if err != nil || len(data) != 4096 || !truncated || st.Size != 100<<20 {
		t.Errorf("ReadFile(100 MB sparse) = %d bytes, truncated %v, size %d, %v", len(data), truncated, st.Size, err)
	}
	if _, _, _, err := fd.ReadFile("missing", 16); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want ErrNotExist", err)
	}
}

// realLinkFile makes a directory holding a directory "real", a symbolic
// link "link" to it and an empty file "file", and opens it.
func realLinkFile(t *testing.T) (string, Dir) {
	t.Helper()
	d := t.TempDir()
	fd := openDir(t, d)
	if err := os.Mkdir(filepath.Join(d, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "file"), "")
	return d, fd
}

func TestOpenDirNeverFollows(t *testing.T) {
	_, fd := realLinkFile(t)
	if cfd, err := fd.OpenDir("link"); err == nil {
		cfd.Close()
		t.Error("OpenDirAt(symlink to dir) succeeded, want ELOOP or ENOTDIR")
	} else if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("OpenDirAt(symlink) = %v, want ELOOP or ENOTDIR", err)
	}
	if _, err := fd.OpenDir("file"); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("OpenDirAt(file) = %v, want ENOTDIR", err)
	}
	cfd, err := fd.OpenDir("real")
	if err != nil {
		t.Fatal(err)
	}
	cfd.Close()
	st, err := fd.Lstat("link")
	if err != nil || st.Mode&fs.ModeSymlink == 0 {
		t.Errorf("Lstatat(symlink) = %v, %v, want a symlink", st.Mode, err)
	}
}

// OpenDirFile opens only a directory, never through a symbolic link, and
// the file it returns is a plain blocking descriptor that can carry a
// flock.
func TestOpenDirFileOnlyDirectories(t *testing.T) {
	d, fd := realLinkFile(t)
	if err := unix.Mkfifo(filepath.Join(d, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"link", "file", "fifo"} {
		if f, err := fd.OpenDirFile(name); err == nil {
			f.Close()
			t.Errorf("OpenDirFile(%s) succeeded, want a refusal", name)
		}
	}
	f, err := fd.OpenDirFile("real")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Name() != filepath.Join(d, "real") {
		t.Errorf("Name() = %q, want %q", f.Name(), filepath.Join(d, "real"))
	}
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("flags %#x, %v: want a blocking descriptor", fl, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("flock: %v", err)
	}
}

// OpenDir of a whole path refuses a symbolic link at any component, at the
// end or on the way, and names the component, however it opens paths
// (openat2 where the kernel has it, or one component at a time).
func TestOpenDirRefusesLinksOnTheWay(t *testing.T) {
	d := t.TempDir()
	if err := os.MkdirAll(filepath.Join(d, "real", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(d, "link"), filepath.Join(d, "link", "sub")} {
		if dir, err := OpenDir(p); err == nil {
			dir.Close()
			t.Errorf("OpenDir(%s) went through a symbolic link", p)
		} else if !strings.Contains(err.Error(), "link") {
			t.Errorf("OpenDir(%s) = %v, which does not name the link", p, err)
		}
	}
	for _, p := range []string{filepath.Join(d, "real", "sub"), d + "/real/./sub"} {
		dir, err := OpenDir(p)
		if err != nil {
			t.Fatalf("OpenDir(%s): %v", p, err)
		}
		dir.Close()
	}
	if dir, err := OpenDir(d + "/real/../real"); err == nil {
		dir.Close()
		t.Error("OpenDir of a path with .. succeeded")
	}
}

func TestReadDirTypes(t *testing.T) {
	d := t.TempDir()
	write(t, filepath.Join(d, "file"), "")
	if err := os.Mkdir(filepath.Join(d, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(d, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(d, "sock"), unix.S_IFSOCK|0o600, 0); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "a\nb\x1b[31m"), "")
	fd := openDir(t, d)
	ents, err := fd.List()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]fs.FileMode{}
	for _, e := range ents {
		got[e.Name] = e.Type
	}
	want := map[string]fs.FileMode{
		"file": 0, "dir": fs.ModeDir, "link": fs.ModeSymlink, "fifo": fs.ModeNamedPipe,
		"sock": fs.ModeSocket, "a\nb\x1b[31m": 0,
	}
	if len(got) != len(want) {
		t.Errorf("ReadDir = %v, want %v (no . or ..)", got, want)
	}
	for n, m := range want {
		if g, ok := got[n]; !ok || g != m {
			if g == fs.ModeIrregular {
				t.Logf("%q: file system gave no type", n)
				continue
			}
			t.Errorf("ReadDir: %q type %v (present %v), want %v", n, g, ok, m)
		}
	}
}

// A directory too big for one getdents buffer is listed whole.
func TestReadDirLarge(t *testing.T) {
	d := t.TempDir()
	var want []string
	for i := 0; i < 2000; i++ {
		n := strings.Repeat("n", 40) + string(rune('a'+i%26)) + strings.Repeat("0", i%7) + "." + strconv.Itoa(i)
		want = append(want, n)
		write(t, filepath.Join(d, n), "")
	}
	fd := openDir(t, d)
	ents, err := fd.List()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "/") != strings.Join(want, "/") {
		t.Errorf("ReadDir listed %d names, want %d", len(got), len(want))
	}
}

// dirent builds one struct linux_dirent64 record, padded to 8 bytes.
func dirent(name string, typ uint8) []byte {
	n := 19 + len(name) + 1
	n = (n + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint64(b[0:8], 42)
	binary.NativeEndian.PutUint64(b[8:16], 7)
	binary.NativeEndian.PutUint16(b[16:18], uint16(n))
	b[18] = typ
	copy(b[19:], name)
	return b
}

func TestParseDirents(t *testing.T) {
	var buf []byte
	buf = append(buf, dirent(".", unix.DT_DIR)...)
	buf = append(buf, dirent("..", unix.DT_DIR)...)
	buf = append(buf, dirent("x.lock", unix.DT_REG)...)
	buf = append(buf, dirent("d", unix.DT_DIR)...)
	buf = append(buf, dirent("l", unix.DT_LNK)...)
	buf = append(buf, dirent("u", unix.DT_UNKNOWN)...)
	buf = append(buf, dirent("p", unix.DT_FIFO)...)
	got := parseDirents(buf, nil)
	want := []Entry{{"x.lock", 0}, {"d", fs.ModeDir}, {"l", fs.ModeSymlink}, {"u", fs.ModeIrregular}, {"p", fs.ModeNamedPipe}}
	if len(got) != len(want) {
		t.Fatalf("parseDirents = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("parseDirents[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// Cut anywhere: no panic, and only whole records come out.
	for n := 0; n <= len(buf); n++ {
		out := parseDirents(buf[:n], nil)
		if len(out) > len(want) {
			t.Fatalf("parseDirents(buf[:%d]) = %d entries", n, len(out))
		}
		for i, e := range out {
			if e != want[i] {
				t.Errorf("parseDirents(buf[:%d])[%d] = %v, want %v", n, i, e, want[i])
			}
		}
	}
}

func TestParseDirentsCorrupt(t *testing.T) {
	good := dirent("x.lock", unix.DT_REG)
	for _, tc := range []struct {
		name   string
		reclen uint16
	}{{"reclen zero", 0}, {"reclen below header", 18}, {"reclen past end", 4096}, {"reclen max", 0xffff}} {
		b := append([]byte(nil), good...)
		binary.NativeEndian.PutUint16(b[16:18], tc.reclen)
		done := make(chan []Entry, 1)
		go func() { done <- parseDirents(b, nil) }()
		select {
		case out := <-done:
			if len(out) != 0 {
				t.Errorf("%s: parseDirents = %v, want nothing", tc.name, out)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: parseDirents loops", tc.name)
		}
	}
	// A name without its NUL is taken to the record's end.
	b := make([]byte, 24)
	binary.NativeEndian.PutUint16(b[16:18], 24)
	b[18] = unix.DT_REG
	copy(b[19:], "abcde")
	if out := parseDirents(b, nil); len(out) != 1 || out[0].Name != "abcde" {
		t.Errorf("parseDirents(no NUL) = %v, want abcde", out)
	}
	// Random garbage never panics.
	seed := uint32(1)
	for i := 0; i < 2000; i++ {
		g := make([]byte, int(seed%300))
		for j := range g {
			seed = seed*1664525 + 1013904223
			g[j] = byte(seed >> 24)
		}
		parseDirents(g, nil)
	}
}

func TestStatCreated(t *testing.T) {
	m := time.Unix(100, 0)
	if got := (Stat{Mtime: m}).Created(); !got.Equal(m) {
		t.Errorf("Created without birth time = %v, want mtime %v", got, m)
	}
	b := time.Unix(50, 0)
	if got := (Stat{Mtime: m, Btime: b}).Created(); !got.Equal(b) {
		t.Errorf("Created = %v, want birth time %v", got, b)
	}
	if !(Stat{Dev: 1, Ino: 2}).SameFile(Stat{Dev: 1, Ino: 2, Size: 9}) || (Stat{Dev: 1, Ino: 2}).SameFile(Stat{Dev: 2, Ino: 2}) {
		t.Error("SameFile compares more or less than dev and inode")
	}
}

func TestRemove(t *testing.T) {
	d := t.TempDir()
	fd := openDir(t, d)
	write(t, filepath.Join(d, "f"), "")
	if err := os.Mkdir(filepath.Join(d, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "dir", "inside"), "")
	if err := os.Symlink("dir", filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	if err := fd.Rmdir("dir"); !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		t.Errorf("Unlinkat(non-empty dir) = %v, want ENOTEMPTY", err)
	}
	if err := fd.Remove("link"); err != nil {
		t.Errorf("Unlinkat(symlink) = %v", err)
	}
	if _, err := os.Stat(filepath.Join(d, "dir", "inside")); err != nil {
		t.Errorf("removing the link touched its target: %v", err)
	}
	if err := fd.Remove("f"); err != nil {
		t.Errorf("Unlinkat(file) = %v", err)
	}
	var pe *fs.PathError
	if err := fd.Remove("f"); !errors.As(err, &pe) || pe.Op != "remove" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Unlinkat(missing) = %#v, want *fs.PathError remove ErrNotExist", err)
	}
}

// A directory is read from its start each time it is listed, through the
// Dir or any copy of it: the walk lists a directory again to see what was
// made beside its locks, and a second listing that began at the end of
// the first would see nothing there.
func TestListAgainFromTheStart(t *testing.T) {
	top := t.TempDir()
	for _, n := range []string{"a.lock", "b.lock", "c"} {
		if err := os.WriteFile(filepath.Join(top, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := OpenRoot(filepath.Dir(top))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	d, err := root.OpenDir(filepath.Base(top))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names := func(d Dir) []string {
		es, err := d.List()
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, e := range es {
			if e.Name != "." && e.Name != ".." {
				ns = append(ns, e.Name)
			}
		}
		slices.Sort(ns)
		return ns
	}
	first := names(d)
	if !slices.Equal(first, []string{"a.lock", "b.lock", "c"}) {
		t.Fatalf("first listing: %q", first)
	}
	if again := names(d); !slices.Equal(again, first) {
		t.Errorf("second listing: %q, want %q", again, first)
	}
	c := d // a copy shares the descriptor and its offset
	if again := names(c); !slices.Equal(again, first) {
		t.Errorf("listing through a copy: %q, want %q", again, first)
	}
}

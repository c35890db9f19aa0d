package verdict

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/lockctl/lockctl/scan"
)

// Every registered lock format (scan.Formats) is checked the same way,
// as go/analysis checks every analyzer: its fuzz targets exist and CI runs
// them, each verdict it declares has a fixture, its fixtures judge as they
// say through scan's walk and the Judge with the fake probe, and
// docs/formats.md has its row. How to add a format: docs/formats.md.

// moduleRoot is where the module's files are, from this package's tests.
const moduleRoot = ".."

// fixtureDir is where a format's fixtures are: one txtar file each.
func fixtureDir(name string) string {
	return filepath.Join(moduleRoot, "scan", "testdata", "formats", name)
}

// fixture is one testdata/formats/<format>/*.txtar: a tree (the archive's
// files; a name ending in / is a directory), the lock in it, the holder's
// state and what the kernel says, and the verdict wanted. Its comment holds
// "key: value" lines:
//
//	lock: the lock's path in the tree
//	want: the verdict
//	holder: running (started before the record), recycled (started
//	        after it), or gone (the default)
//	evidence: held, free, partial (the lock table is not the whole
//	          machine's), none (the default), or a format's own world
//	          (worlds: git-working, shm-free, terraform-applying, ...)
//	link: <path> -> <target>, a symbolic link (repeatable)
//	dir: <path>, an empty directory (repeatable)
//	age: how long ago the lock was last modified (a Go duration)
//	swap: pid=<pid> host=<host>, the lock is vim's swap of that block 0
//	raw: "<Go-quoted string>", the lock's bytes exactly (a txtar file
//	     always ends in a newline; shadow's record ends in a NUL)
type fixture struct {
	file, lock, want, holder, evidence, age, swap, raw string
	links, dirs                                        []string
	ar                                                 *txtar.Archive
}

func readFixture(t *testing.T, file string) fixture {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fx := fixture{file: file, ar: ar, holder: "gone", evidence: "none"}
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "lock":
			fx.lock = v
		case "want":
			fx.want = v
		case "holder":
			fx.holder = v
		case "evidence":
			fx.evidence = v
		case "link":
			fx.links = append(fx.links, v)
		case "dir":
			fx.dirs = append(fx.dirs, v)
		case "age":
			fx.age = v
		case "swap":
			fx.swap = v
		case "raw":
			raw, err := strconv.Unquote(v)
			if err != nil {
				t.Fatalf("%s: raw: %v", file, err)
			}
			fx.raw = raw
		default:
			t.Fatalf("%s: unknown key %q", file, k)
		}
	}
	if fx.lock == "" || fx.want == "" {
		t.Fatalf("%s: no lock: or want: line", file)
	}
	return fx
}

func fixtures(t *testing.T, name string) []fixture {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(fixtureDir(name), "*.txtar"))
	var fxs []fixture
	for _, f := range files {
		fxs = append(fxs, readFixture(t, f))
	}
	return fxs
}

// swapBlock is block 0 of a vim swap, as vim 9.0 writes it
// (src/memline.c, struct block0), of pid on host, padded to 4 KiB.
func swapBlock(t *testing.T, spec string) []byte {
	b := make([]byte, 4096)
	copy(b, "b0VIM 9.0")
	copy(b[28:], "ann")
	copy(b[108:], "/srv/notes.txt")
	for _, kv := range strings.Fields(spec) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "pid":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				t.Fatal(err)
			}
			b[24], b[25], b[26], b[27] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
		case "host":
			copy(b[68:], v)
		}
	}
	return b
}

// build makes the fixture's tree under root and reads its lock as the walk
// does.
func (fx fixture) build(t *testing.T, root string) *scan.Lock {
	t.Helper()
	for _, f := range fx.ar.Files {
		p := filepath.Join(root, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f.Name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range fx.dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range fx.links {
		p, target, _ := strings.Cut(l, " -> ")
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	lock := filepath.Join(root, fx.lock)
	if fx.swap != "" {
		if err := os.WriteFile(lock, swapBlock(t, fx.swap), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if fx.raw != "" {
		if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(lock, []byte(fx.raw), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if fx.age != "" {
		d, err := time.ParseDuration(fx.age)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-d)
		if st, err := os.Lstat(lock); err == nil && st.Mode()&os.ModeSymlink != 0 {
			if err := lchtimes(lock, at); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Chtimes(lock, at, at); err != nil {
			t.Fatal(err)
		}
	}
	l, err := scan.ReadOne(filepath.Dir(lock), filepath.Base(lock))
	if err != nil || l == nil {
		t.Fatalf("%s: scan.ReadOne(%s) = %v, %v", fx.file, fx.lock, l, err)
	}
	return l
}

// worlds are the kernels a fixture's evidence: line names, each set up on
// the fake evidence of its lock: the ones any format may name here, and a
// format's own in its verdict/rule_<name>_test.go (registered with world),
// so that a new kind of world touches its format's files only.
var worlds = map[string]func(ev *fakeEvidence, l *scan.Lock){
	"held": func(ev *fakeEvidence, l *scan.Lock) {
		ev.held = map[[2]uint64][]KernelHolder{{l.Info.Dev, l.Info.Ino}: {fixtureLocker}}
	},
	"free":    nil,
	"none":    nil,
	"partial": func(ev *fakeEvidence, _ *scan.Lock) { ev.whole = false },
}

// fixtureLocker is the process a held world's lock table names.
var fixtureLocker = KernelHolder{Pid: 4242, Comm: "apt-get", How: "POSIX lock", Mode: "WRITE"}

// world registers a format's own kind of world for its fixtures.
func world(name string, set func(ev *fakeEvidence, l *scan.Lock)) {
	if _, ok := worlds[name]; ok {
		panic("two fixture worlds named " + name)
	}
	worlds[name] = set
}

// fixtureEvidence is the kernel a fixture names; local addresses are the
// loopback ones.
type fixtureEvidence struct{ *fakeEvidence }

func (fixtureEvidence) IsLocalAddr(ip string) bool { return strings.HasPrefix(ip, "127.") }

// judge judges l as the fixture says the world is.
func (fx fixture) judge(t *testing.T, l *scan.Lock) Result {
	t.Helper()
	ps := map[int]Proc{}
	if len(l.Holders) > 0 && l.Holders[0].Holder != nil {
		h := l.Holders[0].Holder
		written := l.Holders[0].Info.Mtime
		if !h.Since.IsZero() && h.Since.Before(written) {
			written = h.Since // when the holder says it took the lock
		}
		p := runningSince(written.Add(-time.Minute))
		if h.HasStart {
			p.Start, p.Shown = h.Start, h.Start
		}
		if fx.holder == "recycled" {
			p = runningSince(written.Add(time.Hour))
		}
		if fx.holder != "gone" {
			ps[int(h.Pid)] = p
		}
	}
	ev := &fakeEvidence{complete: true, whole: true}
	w, ok := worlds[fx.evidence]
	if !ok {
		t.Fatalf("%s: unknown evidence %q", fx.file, fx.evidence)
	}
	if w != nil {
		w(ev, l)
	}
	j := &Judge{Host: testHost(), Probe: &fakeProbe{t: t, procs: ps}, Evidence: fixtureEvidence{ev}}
	return j.Judge(l)
}

// TestEveryFormatFixture judges every registered format's fixtures:
// scan's walk reads the tree, and the Judge, with the fake probe and the
// kernel the fixture names, gives the verdict it wants, on a lock that is
// the format's.
func TestEveryFormatFixture(t *testing.T) {
	for _, f := range scan.Formats() {
		for _, fx := range fixtures(t, f.Name) {
			t.Run(f.Name+"/"+strings.TrimSuffix(filepath.Base(fx.file), ".txtar"), func(t *testing.T) {
				l := fx.build(t, t.TempDir())
				if f.Producer != "" && l.Producer != f.Producer {
					t.Fatalf("%s: read as producer %q (format %q), want %q", fx.file, l.Producer, l.Format, f.Producer)
				}
				if len(f.Formats) > 0 && !slices.Contains(f.Formats, l.Format) {
					t.Fatalf("%s: read as format %q, want one of %q", fx.file, l.Format, f.Formats)
				}
				got := fx.judge(t, l)
				checkResult(t, fx.file, got, l)
				if string(got.Verdict) != fx.want {
					t.Errorf("Judge(%s) = %s (%s), want %s", fx.file, got.Verdict, got.Reason, fx.want)
				}
			})
		}
	}
}

// fuzzTargets are the Fuzz functions declared in the _test.go files of
// the package in dir.
func fuzzTargets(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	found := map[string]bool{}
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Fuzz") {
				found[fd.Name.Name] = true
			}
		}
	}
	return found
}

// TestEveryFormat fails for a registered format without a fuzz target of
// its parser that exists (.ci/run fuzzes every registered target),
// without a fixture for each verdict it declares, or without its row in
// docs/formats.md; for a format whose rule is registered without its
// verdict/rule_<name>.go, or the reverse; and for a rule of no format.
func TestEveryFormat(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join(moduleRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "formats.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "$(go run ./internal/dev/fuzzlist)") {
		t.Error(".ci/run does not fuzz the registry's targets (go run ./internal/dev/fuzzlist)")
	}
	targets := map[string]map[string]bool{}
	units := map[string]bool{}
	for _, f := range scan.Formats() {
		if f.Parse != nil && len(f.Fuzz) == 0 {
			t.Errorf("format %s (scan/%s) parses records but names no fuzz target", f.Name, f.Room)
		}
		for _, ft := range f.Fuzz {
			pkg, name, _ := strings.Cut(ft, ":")
			if targets[pkg] == nil {
				targets[pkg] = fuzzTargets(t, filepath.Join(moduleRoot, pkg))
			}
			if !targets[pkg][name] {
				t.Errorf("format %s (scan/%s): fuzz target %s: no func %s in %s/*_test.go", f.Name, f.Room, ft, name, pkg)
			}
		}
		wants := map[string]bool{}
		for _, fx := range fixtures(t, f.Name) {
			wants[fx.want] = true
		}
		for _, v := range f.Verdicts {
			if _, ok := Parse(v); !ok {
				t.Errorf("format %s (scan/%s) declares %q, which is no verdict", f.Name, f.Room, v)
			}
			if !wants[v] {
				t.Errorf("format %s (scan/%s) declares verdict %s, but no fixture in %s wants it", f.Name, f.Room, v, fixtureDir(f.Name))
			}
		}
		if !strings.Contains(string(doc), "\n| `"+f.Name+"` |") {
			t.Errorf("format %s (scan/%s) has no row in docs/formats.md's table of formats (\"| `%s` | ...\")", f.Name, f.Room, f.Name)
		}
		ruleFile := filepath.Join(moduleRoot, "verdict", "rule_"+strings.ReplaceAll(f.Name, "-", "_")+".go")
		_, err := os.Stat(ruleFile)
		if _, ok := rules[f.Name]; ok != (err == nil) {
			t.Errorf("format %s: its rule is registered %v, but %s exists %v: a format's rule is registered by its own file", f.Name, ok, ruleFile, err == nil)
		}
		units[f.Name] = true
	}
	for name := range rules {
		if !units[name] {
			t.Errorf("a rule is registered for %q, which is no registered format", name)
		}
	}
}

// TestAddingAFormat checks docs/architecture.md's "Adding a lock format"
// against the registry: the files it lists are the ones a format is made
// of, and every registered format has them (its rule file only where it
// has a rule).
func TestAddingAFormat(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## Adding a lock format\n")
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	for _, line := range strings.Split(section, "\n") {
		if rest, ok := strings.CutPrefix(line, "- `"); ok {
			name, _, _ := strings.Cut(rest, "`")
			listed = append(listed, name)
		}
	}
	want := []string{"scan/format_<name>.go", "verdict/rule_<name>.go", "scan/testdata/formats/<name>/", "docs/formats.md", "CHANGELOG.md"}
	if !slices.Equal(listed, want) {
		t.Errorf("docs/architecture.md lists %q as what adding a format touches, want %q", listed, want)
	}
	for _, f := range scan.Formats() {
		files := []string{filepath.Join(moduleRoot, "scan", f.Room), fixtureDir(f.Name)}
		if _, ok := rules[f.Name]; ok {
			files = append(files, filepath.Join(moduleRoot, "verdict", "rule_"+strings.ReplaceAll(f.Name, "-", "_")+".go"))
		}
		if !strings.HasPrefix(f.Room, "format_") {
			t.Errorf("format %s: its room %s is not a format_<name>.go", f.Name, f.Room)
		}
		for _, p := range files {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("format %s: %v", f.Name, err)
			}
		}
	}
}

package scan_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/lockctl/lockctl/scan"
)

// manifestSamples are the producers' own files in testdata/manifests
// (SOURCES.md there says where each is from), by data format.
func manifestSamples(t testing.TB) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "manifests", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range files {
		out[filepath.Base(filepath.Dir(f))] = append(out[filepath.Base(filepath.Dir(f))], f)
	}
	return out
}

// TestManifestSamples: every registered data format has a sample written
// by its producer, and the sample is read as that format, by its name and
// bytes; under any other data format's name it is not data.
func TestManifestSamples(t *testing.T) {
	samples := manifestSamples(t)
	for _, f := range scan.DataFormats() {
		t.Run(f.Name, func(t *testing.T) {
			if len(samples[f.Name]) == 0 {
				t.Fatalf("data format %s (scan/%s) has no sample in testdata/manifests/%s/", f.Name, f.Room, f.Name)
			}
			for _, p := range samples[f.Name] {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				name := filepath.Base(p)
				if !slices.Contains(f.Names, name) {
					t.Fatalf("%s: %s is no name of data format %s (%q)", p, name, f.Name, f.Names)
				}
				if err := f.Parse(b); err != nil {
					t.Errorf("%s: Parse = %v, want nil", p, err)
				}
				if got := scan.DataFormatOf(name, b); got == nil || got.Name != f.Name {
					t.Errorf("DataFormatOf(%s) = %v, want %s", p, got, f.Name)
				}
				for _, g := range scan.DataFormats() {
					for _, other := range g.Names {
						if other != name && scan.DataFormatOf(other, b) != nil {
							t.Errorf("%s named %s is read as data", p, other)
						}
					}
				}
			}
		})
	}
}

// TestEveryDataFormat, as verdict's TestEveryFormat for the lock formats:
// every registered data format goes by names the default patterns match
// (else the walk would never meet it), cites its producer, names a fuzz
// target that exists and .ci/run runs, and has its row in
// docs/formats.md's table of data files.
func TestEveryDataFormat(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "formats.md"))
	if err != nil {
		t.Fatal(err)
	}
	var tests strings.Builder
	files, _ := filepath.Glob("*_test.go")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		tests.Write(b)
	}
	m, err := scan.NewMatcher(scan.DefaultNames)
	if err != nil {
		t.Fatal(err)
	}
	ciTargets := strings.Fields(strings.NewReplacer("\\", " ", ";", " ").Replace(string(ci)))
	for _, f := range scan.DataFormats() {
		if len(f.Names) == 0 || f.Parse == nil || f.Source == "" || f.What == "" || f.Producer == "" {
			t.Errorf("data format %s (scan/%s) lacks names, a parser, a source, a what or a producer", f.Name, f.Room)
		}
		for _, n := range f.Names {
			if !m.IsLock(n) {
				t.Errorf("data format %s: %s is not matched by the default names %q", f.Name, n, scan.DefaultNames)
			}
		}
		if len(f.Fuzz) == 0 {
			t.Errorf("data format %s (scan/%s) names no fuzz target", f.Name, f.Room)
		}
		for _, ft := range f.Fuzz {
			pkg, name, _ := strings.Cut(ft, ":")
			if pkg != "scan" || !strings.Contains(tests.String(), "\nfunc "+name+"(f *testing.F)") {
				t.Errorf("data format %s: fuzz target %s: no func %s in scan/*_test.go", f.Name, ft, name)
			}
			if !slices.Contains(ciTargets, ft) {
				t.Errorf("data format %s: fuzz target %s is not in .ci/run's fuzz list", f.Name, ft)
			}
		}
		if !strings.Contains(string(doc), "\n| `"+f.Name+"` | `"+f.Names[0]+"` |") {
			t.Errorf("data format %s (scan/%s) has no row in docs/formats.md's table of data files (\"| `%s` | `%s` | ...\")", f.Name, f.Room, f.Name, f.Names[0])
		}
	}
}

// TestManifestScriptInSync: the CLI's script of data files
// (testdata/script/not_locks_manifests.txtar at the module root) holds
// every sample here, byte for byte, and nothing else.
func TestManifestScriptInSync(t *testing.T) {
	ar, err := txtar.ParseFile(filepath.Join("..", "testdata", "script", "not_locks_manifests.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	inScript := map[string]string{}
	for _, f := range ar.Files {
		inScript[f.Name] = string(f.Data)
	}
	n := 0
	for _, ps := range manifestSamples(t) {
		for _, p := range ps {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			name := "reg/" + filepath.Base(filepath.Dir(p)) + "/" + filepath.Base(p)
			if got, ok := inScript[name]; !ok || got != string(b) {
				t.Errorf("the script's %s is not %s byte for byte", name, p)
			}
			n++
		}
	}
	if n != len(ar.Files) {
		t.Errorf("the script holds %d files, testdata/manifests %d", len(ar.Files), n)
	}
}

// TestManifestParsersRejectRecords: no data parser accepts a lock record,
// an empty file, random bytes, or a fragment of another format.
func TestManifestParsersRejectRecords(t *testing.T) {
	records := map[string]string{
		"empty":    "",
		"pid":      "12345\n",
		"uucp":     "     12345\n",
		"pid-kv":   "pid=12345\nhost=vm\n",
		"no-pid":   "0",
		"registry": "token vm.1.2.0123456789abcdef0123456789abcdef\npid 1\ncommand x\nhost vm\n",
		"json-pid": `{"pid": 12345}`,
		"binary":   "\x00\x01\x02\xff\xfe",
		"text":     "hello, world\n",
		"null":     "null",
		"toml":     "version = 4\n",
		"yaml":     "packages:\n",
	}
	for _, f := range scan.DataFormats() {
		for what, b := range records {
			if err := f.Parse([]byte(what + b)[len(what):]); err == nil {
				t.Errorf("%s.Parse(%s record %q) = nil, want an error", f.Name, what, b)
			}
		}
	}
}

// TestWalkNotLocks: the walk hands a data file to NotLock, never to Found;
// the same name holding a pid record is a lock; ReadOne refuses a data
// file with a NotLockError.
func TestWalkNotLocks(t *testing.T) {
	dir := t.TempDir()
	cargo, err := os.ReadFile(filepath.Join("testdata", "manifests", "cargo", "Cargo.lock"))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	rec := filepath.Join(dir, "rec")
	for _, d := range []string{data, rec} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "Cargo.lock"), cargo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rec, "Cargo.lock"), []byte("12345\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := scan.NewMatcher(scan.DefaultNames)
	if err != nil {
		t.Fatal(err)
	}
	var found, not []string
	w := scan.Walker{
		Match:   m,
		Found:   func(l *scan.Lock) { found = append(found, l.Path) },
		NotLock: func(n *scan.NotLock) { not = append(not, n.Path+" "+n.Format) },
	}
	root, err := scan.ResolveRoot(dir, w.Match)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Walk(root); err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(rec, "Cargo.lock")}; !slices.Equal(found, want) {
		t.Errorf("Found %q, want %q", found, want)
	}
	if want := []string{filepath.Join(data, "Cargo.lock") + " cargo"}; !slices.Equal(not, want) {
		t.Errorf("NotLock %q, want %q", not, want)
	}
	l, err := scan.ReadOne(data, "Cargo.lock")
	if n, ok := scan.IsNotLock(err); !ok || l != nil || n.Format != "cargo" {
		t.Errorf("ReadOne(data file) = %v, %v, want a NotLockError", l, err)
	}
	if l, err := scan.ReadOne(rec, "Cargo.lock"); err != nil || l == nil || l.Format != scan.FormatPid {
		t.Errorf("ReadOne(pid file named Cargo.lock) = %+v, %v, want a pid lock", l, err)
	}
}

// FuzzParseManifest: no data format's parser panics or changes its input,
// whatever the bytes; a format accepted is one that goes by the name.
// One target for every parser (.ci/run's fuzz time is short): the seeds
// are the producers' samples of at most 4 KiB (the fuzzer stalls
// minimising larger ones) and short ones of the others' shape.
func FuzzParseManifest(f *testing.F) {
	for _, ps := range manifestSamples(f) {
		for _, p := range ps {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			if len(b) <= 4096 {
				f.Add(filepath.Base(p), b)
			}
		}
	}
	f.Add("Cargo.lock", []byte("12345\n"))
	f.Add("Pipfile.lock", []byte(`{"_meta": {"hash": {"sha256": "ab"}, "pipfile-spec": 6}, "default": {"a": {"version": "==1"}}, "develop": {}}`))
	f.Add("pubspec.lock", []byte("# Generated by pub\npackages:\n  a:\n    dependency: \"direct main\"\n    version: \"1.0.0\"\nsdks:\n  dart: \">=3.0.0 <4.0.0\"\n"))
	f.Add("poetry.lock", []byte("[[package]]\nname = \"a\"\nversion = \"1\"\nfiles = [\n    {file = \"a.whl\", hash = \"sha256:00\"},\n]\n\n[package.dependencies]\nb = \">=1\"\n\n[metadata]\nlock-version = \"2.0\"\ncontent-hash = \"00\"\n"))
	f.Add("uv.lock", []byte("version = 1\nrevision = 2\nrequires-python = \">=3.12\"\n\n[[package]]\nname = \"a\"\nversion = \"1.0\"\nsource = { registry = \"https://pypi.org/simple\" }\n"))
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		in := string(b)
		for _, df := range scan.DataFormats() {
			_ = df.Parse(b)
			if string(b) != in {
				t.Fatalf("%s.Parse modified its input", df.Name)
			}
		}
		if df := scan.DataFormatOf(name, b); df != nil && !slices.Contains(df.Names, name) {
			t.Fatalf("%s read as %s, which goes by %q", name, df.Name, df.Names)
		}
	})
}

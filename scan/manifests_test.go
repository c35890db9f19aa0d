package scan_test

import (
	"fmt"
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
// target that exists (.ci/run fuzzes every registered one), and has its row in
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
	if !strings.Contains(string(ci), "$(go run ./internal/dev/fuzzlist)") {
		t.Error(".ci/run does not fuzz the registry's targets (go run ./internal/dev/fuzzlist)")
	}
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
	cargo, err := os.ReadFile(filepath.Join("testdata", "manifests", "cargo-lockfile", "Cargo.lock"))
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
	if want := []string{filepath.Join(data, "Cargo.lock") + " cargo-lockfile"}; !slices.Equal(not, want) {
		t.Errorf("NotLock %q, want %q", not, want)
	}
	l, err := scan.ReadOne(data, "Cargo.lock")
	if n, ok := scan.IsNotLock(err); !ok || l != nil || n.Format != "cargo-lockfile" {
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

// TestManifestShapes: the shapes each producer writes beyond the samples
// (older versions, sections the samples lack) are read as data, and near
// misses are not.
func TestManifestShapes(t *testing.T) {
	tests := []struct {
		name, file, body string
		want             bool
	}{
		{"cargo v1 with metadata", "Cargo.lock", "[[package]]\nname = \"a\"\nversion = \"0.1.0\"\ndependencies = [\n \"b 0.2.0 (registry+https://github.com/rust-lang/crates.io-index)\",\n]\n\n[[package]]\nname = \"b\"\nversion = \"0.2.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n[metadata]\n\"checksum b 0.2.0 (registry+https://github.com/rust-lang/crates.io-index)\" = \"00ff\"\n", true},
		{"cargo old root", "Cargo.lock", "[root]\nname = \"a\"\nversion = \"0.1.0\"\n", true},
		{"cargo crlf", "Cargo.lock", "version = 3\r\n\r\n[[package]]\r\nname = \"a\"\r\nversion = \"0.1.0\"\r\n", true},
		{"cargo package without version", "Cargo.lock", "version = 3\n\n[[package]]\nname = \"a\"\n", false},
		{"cargo no package", "Cargo.lock", "version = 3\n", false},
		{"cargo unknown table", "Cargo.lock", "[[package]]\nname = \"a\"\nversion = \"1\"\n[server]\npid = 1\n", false},
		{"cargo unclosed string", "Cargo.lock", "[[package]]\nname = \"a\nversion = \"1\"\n", false},
		{"poetry dotted key and files", "poetry.lock", "[[package]]\nname = \"zope.interface\"\nversion = \"5.0\"\n\n[package.extras]\ntest.all = [\"x\"]\n\n[metadata]\nlock-version = \"1.1\"\ncontent-hash = \"ab\"\n\n[metadata.files]\n\"zope.interface\" = [\n    {file = \"z.whl\", hash = \"sha256:00\"},\n]\n", true},
		{"poetry empty", "poetry.lock", "package = []\n\n[metadata]\nlock-version = \"2.0\"\npython-versions = \"*\"\ncontent-hash = \"ab\"\n", true},
		{"poetry no metadata", "poetry.lock", "[[package]]\nname = \"a\"\nversion = \"1\"\n", false},
		{"uv virtual root", "uv.lock", "version = 1\nrevision = 3\nrequires-python = \">=3.12\"\nresolution-markers = [\n    \"python_full_version >= '3.13'\",\n]\n\n[options]\nexclude-newer = \"2024-03-25T00:00:00Z\"\n\n[manifest]\nmembers = [\"a\"]\n\n[[package]]\nname = \"a\"\nsource = { virtual = \".\" }\n\n[package.metadata]\nrequires-dist = [{ name = \"b\", specifier = \">=1\" }]\n", true},
		{"uv without requires-python", "uv.lock", "version = 1\n\n[[package]]\nname = \"a\"\nversion = \"1\"\n", false},
		{"yarn v1 dependencies", "yarn.lock", "# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.\n# yarn lockfile v1\n\n\n\"@babel/code-frame@^7.0.0\", \"@babel/code-frame@^7.10.4\":\n  version \"7.10.4\"\n  resolved \"https://registry.yarnpkg.com/@babel/code-frame/-/code-frame-7.10.4.tgz#168da1a3\"\n  integrity sha512-vG6SvB6oYEhvgisZNFRmRCUkLz11c7rp+tbNTynGqc6mS1d5ATd/sGyV6W0KZZnXRKMTzZDRgQT3Ou9jhpAfUg==\n  dependencies:\n    \"@babel/highlight\" \"^7.10.4\"\n", true},
		{"yarn v1 without header", "yarn.lock", "\"a@^1\":\n  version \"1.0.0\"\n", false},
		{"yarn v1 field at column 0 first", "yarn.lock", "# yarn lockfile v1\n  version \"1\"\n", false},
		{"berry quoted fields", "yarn.lock", "__metadata:\n  version: 6\n  cacheKey: 8\n\n\"@types/node@npm:*\":\n  version: 20.1.0\n  resolution: \"@types/node@npm:20.1.0\"\n  dependencies:\n    \"undici-types\": \"npm:~5.26.4\"\n  peerDependenciesMeta:\n    typescript:\n      optional: true\n  checksum: 00ff\n  languageName: node\n  linkType: hard\n", true},
		{"berry without metadata", "yarn.lock", "\"a@npm:1\":\n  version: 1.0.0\n", false},
		{"gemfile modern", "Gemfile.lock", "GEM\n  remote: https://rubygems.org/\n  specs:\n    rake (13.0.6)\n\nPLATFORMS\n  ruby\n  x86_64-linux\n\nDEPENDENCIES\n  rake\n\nCHECKSUMS\n  rake (13.0.6) sha256=00ff\n\nRUBY VERSION\n   ruby 3.3.0p0\n\nBUNDLED WITH\n   2.5.3\n", true},
		{"gemfile unknown section", "Gemfile.lock", "GEM\n  remote: https://rubygems.org/\n  specs:\n\nDEPENDENCIES\n\nPID\n  123\n", false},
		{"podfile modern", "Podfile.lock", "PODS:\n  - Alamofire (5.4.0)\n  - Firebase/Core (8.0.0):\n    - Firebase/CoreOnly (= 8.0.0)\n\nDEPENDENCIES:\n  - Alamofire\n\nSPEC REPOS:\n  trunk:\n    - Alamofire\n\nSPEC CHECKSUMS:\n  Alamofire: 00ff\n\nPODFILE CHECKSUM: 00ff\n\nCOCOAPODS: 1.10.1\n", true},
		{"podfile without cocoapods", "Podfile.lock", "PODS:\n  - A (1.0)\n", false},
		{"mix empty", "mix.lock", "%{}\n", true},
		{"mix broken tuple", "mix.lock", "%{\n  \"a\": {:hex, :a, \"1.0\"},},\n}\n", false},
		{"pubspec sdk package", "pubspec.lock", "# Generated by pub\n# See https://dart.dev/tools/pub/glossary#lockfile\npackages:\n  flutter:\n    dependency: \"direct main\"\n    description: flutter\n    source: sdk\n    version: \"0.0.0\"\nsdks:\n  dart: \">=3.0.0 <4.0.0\"\n  flutter: \">=3.10.0\"\n", true},
		{"pubspec without sdks", "pubspec.lock", "packages:\n  a:\n    version: \"1\"\n", false},
		{"flake root not a node", "flake.lock", `{"nodes": {"root": {}}, "root": "other", "version": 7}`, false},
		{"flake", "flake.lock", `{"nodes": {"root": {}}, "root": "root", "version": 7}`, true},
		{"composer dev null", "composer.lock", `{"content-hash": "ab", "packages": [], "packages-dev": null}`, true},
		{"composer no hash", "composer.lock", `{"packages": []}`, false},
		{"deno v5", "deno.lock", `{"version": "5", "specifiers": {"jsr:@std/fs@1": "1.0.0"}, "jsr": {}, "npm": {}, "workspace": {"dependencies": ["jsr:@std/fs@1"]}}`, true},
		{"deno unknown key", "deno.lock", `{"version": "4", "pid": {}}`, false},
		{"bun trailing commas", "bun.lock", "{\n  \"lockfileVersion\": 1,\n  \"workspaces\": {\n    \"\": {\n      \"name\": \"a\",\n    },\n  },\n  \"packages\": {},\n}\n", true},
		{"bun no workspaces", "bun.lock", `{"lockfileVersion": 1}`, false},
		{"renv package name mismatch", "renv.lock", `{"R": {"Version": "4.3.0"}, "Packages": {"a": {"Package": "b", "Version": "1"}}}`, false},
		{"pipenv", "Pipfile.lock", `{"_meta": {"hash": {"sha256": "ab"}, "pipfile-spec": 6}, "default": {}, "develop": {}}`, true},
		{"pipenv null spec", "Pipfile.lock", `{"_meta": {"hash": {}, "pipfile-spec": null}, "default": {}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scan.DataFormatOf(tt.file, []byte(tt.body))
			if (got != nil) != tt.want {
				why := ""
				for _, f := range scan.DataFormats() {
					if slices.Contains(f.Names, tt.file) {
						why += f.Name + ": " + fmt.Sprint(f.Parse([]byte(tt.body))) + "; "
					}
				}
				t.Errorf("DataFormatOf(%s, %s) = %v, want data %v (%s)", tt.file, tt.name, got, tt.want, why)
			}
		})
	}
}

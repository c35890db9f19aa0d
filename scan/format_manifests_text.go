package scan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The line-structured dependency manifests: yarn's two, Bundler's, Mix's,
// pub's and CocoaPods's. Each parser reads every line: a line its
// producer would not write is an error, so a lock record never parses.

var dataYarnV1 = DataFormat{
	Name: "yarn-v1", Producer: "Yarn 1", What: "Yarn's dependency pins", Room: "format_manifests_text.go",
	Names: []string{"yarn.lock"}, Parse: parseYarnV1, Fuzz: manifestFuzz,
	Source: "yarnpkg/yarn src/lockfile/stringify.js (the two header comments, \"# yarn lockfile v1\"; entries of two-space indented \"key value\" lines) and src/lockfile/parse.js",
}

// parseYarnV1: the header "# yarn lockfile v1" among the leading
// comments, then entries: a line at column 0 ending in ":", and its
// fields indented by two spaces a level, each "key value" or "key:" that
// opens a deeper level.
func parseYarnV1(b []byte) error {
	lines, err := textLines(b)
	if err != nil {
		return err
	}
	header := false
	i := 0
	for ; i < len(lines) && (lines[i] == "" || strings.HasPrefix(lines[i], "#")); i++ {
		header = header || lines[i] == "# yarn lockfile v1"
	}
	if !header {
		return errors.New("no \"# yarn lockfile v1\" header")
	}
	return indented(lines[i:], func(depth int, line string) error {
		if depth == 0 || strings.HasSuffix(line, ":") {
			return nil // an entry, or a level opened
		}
		if k, v, ok := strings.Cut(line, " "); !ok || k == "" || v == "" {
			return errors.New("a field that is not \"key value\"")
		}
		return nil
	})
}

var dataYarnBerry = DataFormat{
	Name: "yarn-berry", Producer: "Yarn 2 and later", What: "Yarn's dependency pins", Room: "format_manifests_text.go",
	Names: []string{"yarn.lock"}, Parse: parseYarnBerry, Fuzz: manifestFuzz,
	Source: "yarnpkg/berry packages/yarnpkg-core/sources/Project.ts (generateLockfile: a \"__metadata\" entry with \"version\" and \"cacheKey\" first) and packages/yarnpkg-parsers/sources/syml.ts (stringifySyml)",
}

// parseYarnBerry: leading comments, then YAML entries at column 0 ending
// in ":", the first "__metadata:" with an integer "version:" under it, and
// two-space indented "key: value" or "key:" lines.
func parseYarnBerry(b []byte) error {
	lines, err := textLines(b)
	if err != nil {
		return err
	}
	i := 0
	for ; i < len(lines) && (lines[i] == "" || strings.HasPrefix(lines[i], "#")); i++ {
	}
	if i+1 >= len(lines) || lines[i] != "__metadata:" {
		return errors.New("no __metadata")
	}
	version := false
	for _, l := range lines[i+1:] {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		if v, ok := strings.CutPrefix(l, "  version: "); ok {
			_, err := strconv.ParseUint(v, 10, 32)
			version = err == nil
		}
	}
	if !version {
		return errors.New("no __metadata version")
	}
	return indented(lines[i:], yamlField)
}

var dataPub = DataFormat{
	Name: "pub", Producer: "pub (Dart, Flutter)", What: "Dart pub's dependency pins", Room: "format_manifests_text.go",
	Names: []string{"pubspec.lock"}, Parse: parsePubspecLock, Fuzz: manifestFuzz,
	Source: "dart-lang/pub lib/src/lock_file.dart (LockFile.serialize: \"packages\" then \"sdks\")",
}

// parsePubspecLock: leading comments, then YAML whose only keys at column
// 0 are "packages:" and "sdks:", both there, with two-space indented
// "key: value" or "key:" lines under them.
func parsePubspecLock(b []byte) error {
	lines, err := textLines(b)
	if err != nil {
		return err
	}
	i := 0
	for ; i < len(lines) && (lines[i] == "" || strings.HasPrefix(lines[i], "#")); i++ {
	}
	seen := map[string]bool{}
	for _, l := range lines[i:] {
		if l != "" && l[0] != ' ' {
			switch l {
			case "packages:", "packages: {}", "sdks:":
				seen[strings.TrimSuffix(l, " {}")] = true
			default:
				return fmt.Errorf("a key pub does not write at column 0")
			}
		}
	}
	if !seen["packages:"] || !seen["sdks:"] {
		return errors.New("no packages or no sdks")
	}
	return indented(lines[i:], yamlField)
}

var dataCocoaPods = DataFormat{
	Name: "cocoapods", Producer: "CocoaPods", What: "CocoaPods's dependency pins", Room: "format_manifests_text.go",
	Names: []string{"Podfile.lock"}, Parse: parsePodfileLock, Fuzz: manifestFuzz,
	Source: "CocoaPods/Core lib/cocoapods-core/lockfile.rb (to_hash, HASH_KEY_ORDER: PODS, DEPENDENCIES, SPEC REPOS, EXTERNAL SOURCES, CHECKOUT OPTIONS, SPEC CHECKSUMS, PODFILE CHECKSUM, COCOAPODS) and yaml_helper.rb",
}

// podKeys are the keys of a Podfile.lock, at column 0.
var podKeys = map[string]bool{
	"PODS": true, "DEPENDENCIES": true, "SPEC REPOS": true, "EXTERNAL SOURCES": true,
	"CHECKOUT OPTIONS": true, "SPEC CHECKSUMS": true, "PODFILE CHECKSUM": true, "COCOAPODS": true,
}

// parsePodfileLock: YAML whose lines at column 0 are CocoaPods's keys
// ("KEY:" or "KEY: value"), PODS and COCOAPODS among them, or list items
// ("- "), and whose other lines are indented.
func parsePodfileLock(b []byte) error {
	lines, err := textLines(b)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, l := range lines {
		switch {
		case l == "" || l[0] == ' ' || strings.HasPrefix(l, "- "):
			if seen["COCOAPODS"] && l != "" {
				return errors.New("a line after COCOAPODS")
			}
			if len(seen) == 0 && l != "" {
				return errors.New("a line before the first key")
			}
		default:
			k, _, ok := strings.Cut(l, ":")
			if !ok || !podKeys[k] || seen[k] {
				return errors.New("a key CocoaPods does not write")
			}
			seen[k] = true
		}
	}
	if !seen["PODS"] || !seen["COCOAPODS"] {
		return errors.New("no PODS or no COCOAPODS")
	}
	return nil
}

var dataBundler = DataFormat{
	Name: "bundler", Producer: "Bundler", What: "Bundler's gem pins", Room: "format_manifests_text.go",
	Names: []string{"Gemfile.lock"}, Parse: parseGemfileLock, Fuzz: manifestFuzz,
	Source: "rubygems/rubygems bundler/lib/bundler/lockfile_parser.rb (the sections GIT, GEM, PATH, PLUGIN SOURCE, PLATFORMS, DEPENDENCIES, CHECKSUMS, RUBY VERSION, BUNDLED WITH) and bundler/lib/bundler/lockfile_generator.rb",
}

var gemSections = map[string]bool{
	"GIT": true, "GEM": true, "PATH": true, "PLUGIN SOURCE": true, "PLATFORMS": true,
	"DEPENDENCIES": true, "CHECKSUMS": true, "RUBY VERSION": true, "BUNDLED WITH": true,
}

// parseGemfileLock: lines at column 0 are Bundler's section names, every
// other line is indented; a source section (GEM, GIT, PATH, PLUGIN SOURCE)
// has "  remote: " and "  specs:" lines, and DEPENDENCIES is there.
func parseGemfileLock(b []byte) error {
	lines, err := textLines(b)
	if err != nil {
		return err
	}
	section := ""
	remote, specs := false, false
	source, deps := false, false
	for _, l := range lines {
		switch {
		case l == "":
		case l[0] != ' ':
			if !gemSections[l] {
				return errors.New("a section Bundler does not write")
			}
			section = l
			deps = deps || l == "DEPENDENCIES"
			remote, specs = false, false
		case section == "":
			return errors.New("a line before the first section")
		default:
			if section == "GEM" || section == "GIT" || section == "PATH" || section == "PLUGIN SOURCE" {
				remote = remote || strings.HasPrefix(l, "  remote: ")
				specs = specs || l == "  specs:"
				source = source || remote && specs
			}
		}
	}
	if !source || !deps {
		return errors.New("no source with remote and specs, or no DEPENDENCIES")
	}
	return nil
}

var dataMix = DataFormat{
	Name: "mix", Producer: "Mix (Elixir, Hex)", What: "Mix's dependency pins", Room: "format_manifests_text.go",
	Names: []string{"mix.lock"}, Parse: parseMixLock, Fuzz: manifestFuzz,
	Source: "elixir-lang/elixir lib/mix/lib/mix/dep/lock.ex (Mix.Dep.Lock.write: \"%{\", one `  \"name\": {...},` line a dependency, \"}\"); hexpm/hex mix.lock",
}

// parseMixLock: "%{" alone on the first line and "}" on the last (or
// "%{}"), and between them one line a dependency: two spaces, a quoted
// name, ": {:", a tuple whose brackets balance outside strings, and "},".
func parseMixLock(b []byte) error {
	lines, err := textLines(b)
	if err != nil {
		return err
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 1 && lines[0] == "%{}" {
		return nil
	}
	if len(lines) < 3 || lines[0] != "%{" || lines[len(lines)-1] != "}" {
		return errors.New("not an Elixir map")
	}
	for _, l := range lines[1 : len(lines)-1] {
		rest, ok := strings.CutPrefix(l, "  \"")
		if !ok {
			return errors.New("not a dependency line")
		}
		name, tuple, ok := strings.Cut(rest, "\": ")
		if !ok || name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
			return errors.New("not a dependency name")
		}
		if !strings.HasPrefix(tuple, "{:") || !strings.HasSuffix(tuple, "},") || !balanced(strings.TrimSuffix(tuple, ",")) {
			return errors.New("not a dependency tuple")
		}
	}
	return nil
}

// balanced says s is one bracketed term: {} [] and %{} balance outside
// "strings", and it closes only at its end.
func balanced(s string) bool {
	var stack []byte
	var q quoted
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q.inside(c):
		case c == '{' || c == '[':
			stack = append(stack, c)
		case c == '}' || c == ']':
			open := byte('{')
			if c == ']' {
				open = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != open {
				return false
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 && i != len(s)-1 {
				return false
			}
		}
	}
	return !q.in && len(stack) == 0
}

// textLines splits b, which must be UTF-8 text without NUL, into lines,
// each without its "\n" (or "\r\n": a checkout may have made it so).
func textLines(b []byte) ([]string, error) {
	if !utf8.Valid(b) || strings.IndexByte(string(b), 0) >= 0 {
		return nil, errors.New("not text")
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines, nil
}

// indented walks YAML-like lines: blank ones, comments at column 0, and
// lines indented two spaces a level, never deeper than one level below a
// line that ends in ":" (which opens it). field checks each line with its
// depth and its text unindented. The first line that is not blank must be
// at column 0.
func indented(lines []string, field func(depth int, line string) error) error {
	open := 0 // the deepest level a line may be at
	for _, l := range lines {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if n%2 != 0 || n/2 > open || strings.TrimSpace(l) == "" || strings.ContainsRune(l, '\t') {
			return errors.New("a line out of place")
		}
		depth, text := n/2, l[n:]
		if err := field(depth, text); err != nil {
			return err
		}
		open = depth
		if strings.HasSuffix(text, ":") {
			open = depth + 1
		}
	}
	return nil
}

// yamlField checks one line of the YAML subset berry and pub write: an
// entry at column 0 ending in ":", and below it "key: value" or "key:"
// (keys may be quoted).
func yamlField(depth int, line string) error {
	if depth == 0 {
		if !strings.HasSuffix(line, ":") && line != "packages: {}" {
			return errors.New("an entry that does not end in \":\"")
		}
		return nil
	}
	if strings.HasSuffix(line, ":") {
		return nil
	}
	k, v, ok := strings.Cut(line, ": ")
	if strings.HasPrefix(line, "\"") {
		end := strings.Index(line[1:], "\": ")
		if end < 0 {
			return errors.New("a field that is not \"key: value\"")
		}
		k, v, ok = line[:end+2], line[end+4:], true
	}
	if !ok || k == "" || v == "" {
		return errors.New("a field that is not \"key: value\"")
	}
	return nil
}

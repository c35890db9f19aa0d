package scan

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The TOML dependency manifests: Cargo's, Poetry's and uv's. Each is read
// by tomlParse, a strict parser of the part of TOML 1.0 that the three
// write (comments, [table] and [[array]] headers of dotted keys, key =
// value lines (dotted keys too) whose values are strings, integers, floats, booleans, arrays
// over many lines and one-line inline tables), then checked for its
// producer's own structure.

var dataCargo = DataFormat{
	Name: "cargo-lockfile", Producer: "Cargo", What: "Cargo's dependency pins", Room: "format_manifests_toml.go",
	Names: []string{"Cargo.lock"}, Parse: parseCargoLock, Fuzz: manifestFuzz,
	Source: "rust-lang/cargo src/cargo/ops/lockfile.rs (resolve_to_string_orig, emit_package) and src/cargo/core/resolver/encode.rs (EncodableResolve: version, package, root, metadata, patch)",
}

// parseCargoLock: only "version" (an integer) before the first table;
// tables [[package]] (at least one, or the old [root]), [metadata] and
// [[patch.unused]]; every package and root with a string name and version.
func parseCargoLock(b []byte) error {
	doc, err := tomlParse(b)
	if err != nil {
		return err
	}
	for k, v := range doc.top {
		if k != "version" || v.kind != 'i' {
			return fmt.Errorf("top-level %q is not Cargo's", k)
		}
	}
	pkgs := 0
	for _, t := range doc.tables {
		switch {
		case t.header == "package" && t.array, t.header == "root" && !t.array:
			if err := t.nameVersion(true); err != nil {
				return err
			}
			pkgs++
		case t.header == "metadata" && !t.array, t.header == "patch.unused" && t.array:
		default:
			return fmt.Errorf("table %q is not Cargo's", t.header)
		}
	}
	if pkgs == 0 {
		return errors.New("no [[package]]")
	}
	return nil
}

var dataPoetry = DataFormat{
	Name: "poetry", Producer: "Poetry", What: "Poetry's dependency pins", Room: "format_manifests_toml.go",
	Names: []string{"poetry.lock"}, Parse: parsePoetryLock, Fuzz: manifestFuzz,
	Source: "python-poetry/poetry src/poetry/packages/locker.py (_write_lock_data, _get_lock_data: [[package]] tables and [metadata] with \"lock-version\", \"python-versions\", \"content-hash\")",
}

// parsePoetryLock: [[package]] tables each with a string name and version
// (their sub-tables [package.dependencies] and the like after them), or
// "package = []" when there is none, and a [metadata] table with a string
// "content-hash" ([metadata.files] in old ones).
func parsePoetryLock(b []byte) error {
	doc, err := tomlParse(b)
	if err != nil {
		return err
	}
	for k, v := range doc.top {
		if k != "package" || v.kind != 'a' {
			return fmt.Errorf("top-level %q is not Poetry's", k)
		}
	}
	meta, inPackage := false, false
	for _, t := range doc.tables {
		switch {
		case t.header == "package" && t.array:
			if err := t.nameVersion(true); err != nil {
				return err
			}
			inPackage = true
		case strings.HasPrefix(t.header, "package.") && inPackage:
		case t.header == "metadata" && !t.array:
			if v, ok := t.keys["content-hash"]; !ok || v.kind != 's' {
				return errors.New("[metadata] has no content-hash")
			}
			meta, inPackage = true, false
		case strings.HasPrefix(t.header, "metadata.") && meta:
		default:
			return fmt.Errorf("table %q is not Poetry's", t.header)
		}
	}
	if !meta {
		return errors.New("no [metadata]")
	}
	return nil
}

var dataUV = DataFormat{
	Name: "uv", Producer: "uv", What: "uv's dependency pins", Room: "format_manifests_toml.go",
	Names: []string{"uv.lock"}, Parse: parseUVLock, Fuzz: manifestFuzz,
	Source: "astral-sh/uv crates/uv-resolver/src/lock/mod.rs (Lock::to_toml: \"version\", \"revision\", \"requires-python\", then [options], [manifest] and [[package]] tables)",
}

// parseUVLock: an integer "version" and a string "requires-python" before
// the first table; tables [[package]] each with a string name and a
// version or source (with their [package.*] sub-tables), [options] and
// [manifest] (with theirs).
func parseUVLock(b []byte) error {
	doc, err := tomlParse(b)
	if err != nil {
		return err
	}
	if v, ok := doc.top["version"]; !ok || v.kind != 'i' {
		return errors.New("no integer version")
	}
	if v, ok := doc.top["requires-python"]; !ok || v.kind != 's' {
		return errors.New("no requires-python")
	}
	inPackage := false
	for _, t := range doc.tables {
		switch {
		case t.header == "package" && t.array:
			if err := t.nameVersion(false); err != nil {
				return err
			}
			inPackage = true
		case strings.HasPrefix(t.header, "package.") && inPackage:
		case t.header == "options", t.header == "manifest",
			strings.HasPrefix(t.header, "options."), strings.HasPrefix(t.header, "manifest."):
			inPackage = false
		default:
			return fmt.Errorf("table %q is not uv's", t.header)
		}
	}
	return nil
}

// tomlDoc is a parsed TOML document: the keys before the first table
// header, and each table in order.
type tomlDoc struct {
	top    map[string]tomlVal
	tables []*tomlTable
}

type tomlTable struct {
	header string // dotted, as written, bare keys only
	array  bool   // [[header]]
	keys   map[string]tomlVal
}

// tomlVal is a value: its kind ('s' string, 'i' integer, 'f' float, 'b'
// boolean, 'a' array, 't' inline table) and a string's text.
type tomlVal struct {
	kind byte
	s    string
}

// nameVersion says t has a string name and a string version (or, unless
// needVersion, a source instead of the version).
func (t *tomlTable) nameVersion(needVersion bool) error {
	if v, ok := t.keys["name"]; !ok || v.kind != 's' || v.s == "" {
		return fmt.Errorf("a [%s] without a name", t.header)
	}
	if v, ok := t.keys["version"]; ok && v.kind == 's' && v.s != "" {
		return nil
	}
	if _, ok := t.keys["source"]; ok && !needVersion {
		return nil
	}
	return fmt.Errorf("a [%s] without a version", t.header)
}

// tomlParse parses b as the subset of TOML the manifests use. Anything
// outside it is an error: a lock record never parses.
func tomlParse(b []byte) (*tomlDoc, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("not UTF-8")
	}
	p := &tomlParser{s: string(b)}
	doc := &tomlDoc{top: map[string]tomlVal{}}
	cur := doc.top
	for {
		p.skipSpace()
		if p.eof() {
			return doc, nil
		}
		switch p.peek() {
		case '\n':
			p.i++
			continue
		case '\r':
			if err := p.eol(); err != nil {
				return nil, err
			}
			continue
		case '#':
			p.comment()
			continue
		case '[':
			t, err := p.header()
			if err != nil {
				return nil, err
			}
			doc.tables = append(doc.tables, t)
			cur = t.keys
		default:
			k, err := p.key()
			if err != nil {
				return nil, err
			}
			for p.skipSpace(); p.take('.'); p.skipSpace() { // a dotted key
				p.skipSpace()
				sub, err := p.key()
				if err != nil {
					return nil, err
				}
				k += "." + sub
			}
			if !p.take('=') {
				return nil, p.errf("no = after a key")
			}
			p.skipSpace()
			v, err := p.value(0)
			if err != nil {
				return nil, err
			}
			if _, dup := cur[k]; dup {
				return nil, p.errf("key %q twice", k)
			}
			cur[k] = v
		}
		if err := p.eol(); err != nil {
			return nil, err
		}
	}
}

type tomlParser struct {
	s string
	i int
}

func (p *tomlParser) eof() bool  { return p.i >= len(p.s) }
func (p *tomlParser) peek() byte { return p.s[p.i] }

func (p *tomlParser) take(c byte) bool {
	if !p.eof() && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *tomlParser) errf(format string, args ...any) error {
	return fmt.Errorf("TOML at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *tomlParser) skipSpace() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *tomlParser) comment() {
	for !p.eof() && p.s[p.i] != '\n' {
		p.i++
	}
}

// eol takes the end of a line: spaces, a comment, and a newline (or the
// end of the input).
func (p *tomlParser) eol() error {
	p.skipSpace()
	if !p.eof() && p.peek() == '#' {
		p.comment()
	}
	p.take('\r')
	if p.eof() || p.take('\n') {
		return nil
	}
	return p.errf("more on the line")
}

// skipBlank skips spaces, newlines and comments (inside an array).
func (p *tomlParser) skipBlank() {
	for !p.eof() {
		switch p.peek() {
		case ' ', '\t', '\n', '\r':
			p.i++
		case '#':
			p.comment()
		default:
			return
		}
	}
}

// header reads [a.b] or [[a.b]].
func (p *tomlParser) header() (*tomlTable, error) {
	p.i++ // [
	t := &tomlTable{keys: map[string]tomlVal{}, array: p.take('[')}
	var parts []string
	for {
		p.skipSpace()
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		parts = append(parts, k)
		p.skipSpace()
		if !p.take('.') {
			break
		}
	}
	if !p.take(']') || t.array && !p.take(']') {
		return nil, p.errf("an unclosed table header")
	}
	t.header = strings.Join(parts, ".")
	return t, nil
}

func isBareKey(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// key reads a bare key or a quoted one.
func (p *tomlParser) key() (string, error) {
	if p.eof() {
		return "", p.errf("no key")
	}
	if c := p.peek(); c == '"' || c == '\'' {
		v, err := p.str()
		return v.s, err
	}
	j := p.i
	for !p.eof() && isBareKey(p.peek()) {
		p.i++
	}
	if j == p.i {
		return "", p.errf("no key")
	}
	return p.s[j:p.i], nil
}

// value reads one value; depth bounds nesting.
func (p *tomlParser) value(depth int) (tomlVal, error) {
	if depth > 32 {
		return tomlVal{}, p.errf("nested too deep")
	}
	if p.eof() {
		return tomlVal{}, p.errf("no value")
	}
	switch c := p.peek(); {
	case c == '"' || c == '\'':
		return p.str()
	case c == '[':
		p.i++
		for {
			p.skipBlank()
			if p.take(']') {
				return tomlVal{kind: 'a'}, nil
			}
			if _, err := p.value(depth + 1); err != nil {
				return tomlVal{}, err
			}
			p.skipBlank()
			if p.take(']') {
				return tomlVal{kind: 'a'}, nil
			}
			if !p.take(',') {
				return tomlVal{}, p.errf("no , in an array")
			}
		}
	case c == '{':
		p.i++
		keys := map[string]bool{}
		p.skipSpace()
		if p.take('}') {
			return tomlVal{kind: 't'}, nil
		}
		for {
			p.skipSpace()
			k, err := p.key()
			if err != nil {
				return tomlVal{}, err
			}
			for p.take('.') { // a dotted key
				sub, err := p.key()
				if err != nil {
					return tomlVal{}, err
				}
				k += "." + sub
			}
			if keys[k] {
				return tomlVal{}, p.errf("key %q twice", k)
			}
			keys[k] = true
			p.skipSpace()
			if !p.take('=') {
				return tomlVal{}, p.errf("no = in an inline table")
			}
			p.skipSpace()
			if _, err := p.value(depth + 1); err != nil {
				return tomlVal{}, err
			}
			p.skipSpace()
			if p.take('}') {
				return tomlVal{kind: 't'}, nil
			}
			if !p.take(',') {
				return tomlVal{}, p.errf("no , in an inline table")
			}
		}
	case strings.HasPrefix(p.s[p.i:], "true"):
		p.i += 4
		return tomlVal{kind: 'b'}, nil
	case strings.HasPrefix(p.s[p.i:], "false"):
		p.i += 5
		return tomlVal{kind: 'b'}, nil
	default:
		return p.number()
	}
}

// number reads a decimal integer or float: [+-]digits[.digits][e[+-]digits],
// with single underscores between digits.
func (p *tomlParser) number() (tomlVal, error) {
	j := p.i
	p.take('+')
	if p.i == j {
		p.take('-')
	}
	digits := func() bool {
		k := p.i
		for !p.eof() && (p.peek() >= '0' && p.peek() <= '9' || p.peek() == '_' && p.i > k && p.i+1 < len(p.s) && p.s[p.i+1] >= '0' && p.s[p.i+1] <= '9') {
			p.i++
		}
		return p.i > k
	}
	if !digits() {
		return tomlVal{}, p.errf("not a value")
	}
	kind := byte('i')
	if p.take('.') {
		if !digits() {
			return tomlVal{}, p.errf("not a number")
		}
		kind = 'f'
	}
	if p.take('e') || p.take('E') {
		if !p.take('+') {
			p.take('-')
		}
		if !digits() {
			return tomlVal{}, p.errf("not a number")
		}
		kind = 'f'
	}
	if !p.eof() && (isBareKey(p.peek()) || p.peek() == '.') {
		return tomlVal{}, p.errf("not a number")
	}
	return tomlVal{kind: kind, s: p.s[j:p.i]}, nil
}

// str reads a basic or literal string, each quoted once or (over many
// lines) three times, checking a basic string's escapes.
func (p *tomlParser) str() (tomlVal, error) {
	q := p.peek()
	multi := strings.HasPrefix(p.s[p.i:], strings.Repeat(string(q), 3))
	if multi {
		p.i += 3
		end := strings.Index(p.s[p.i:], strings.Repeat(string(q), 3))
		if end < 0 {
			return tomlVal{}, p.errf("an unclosed string")
		}
		body := p.s[p.i : p.i+end]
		p.i += end + 3
		for p.i < len(p.s) && p.s[p.i] == q { // up to two quotes may end the body
			p.i++
		}
		if q == '"' && !validEscapes(body, true) {
			return tomlVal{}, p.errf("a bad escape")
		}
		return tomlVal{kind: 's', s: body}, nil
	}
	p.i++
	var sb strings.Builder
	for {
		if p.eof() || p.peek() == '\n' {
			return tomlVal{}, p.errf("an unclosed string")
		}
		c := p.peek()
		p.i++
		switch {
		case c == q:
			return tomlVal{kind: 's', s: sb.String()}, nil
		case c == '\\' && q == '"':
			if p.eof() {
				return tomlVal{}, p.errf("an unclosed string")
			}
			e := p.peek()
			p.i++
			switch e {
			case 'b', 't', 'n', 'f', 'r', '"', '\\':
				sb.WriteByte(e)
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				if p.i+n > len(p.s) || !isHexText(p.s[p.i:p.i+n]) {
					return tomlVal{}, p.errf("a bad escape")
				}
				p.i += n
			default:
				return tomlVal{}, p.errf("a bad escape")
			}
		case c < 0x20 && c != '\t' || c == 0x7f:
			return tomlVal{}, p.errf("a control character in a string")
		default:
			sb.WriteByte(c)
		}
	}
}

// validEscapes checks the escapes of a basic string's body (multi: one
// over lines, where a backslash may end a line).
func validEscapes(s string, multi bool) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++
		if i >= len(s) {
			return false
		}
		switch s[i] {
		case 'b', 't', 'n', 'f', 'r', '"', '\\':
		case 'u':
			if i+5 > len(s) || !isHexText(s[i+1:i+5]) {
				return false
			}
			i += 4
		case 'U':
			if i+9 > len(s) || !isHexText(s[i+1:i+9]) {
				return false
			}
			i += 8
		case ' ', '\t', '\n', '\r':
			if !multi {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func isHexText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

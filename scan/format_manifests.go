package scan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// The dependency manifests named like locks (issue 42, "data files are
// not locks"): one DataFormat each, recognised by its exact base name and
// a strict parser of the structure its producer writes, never by a
// substring. The JSON ones are here; the TOML ones (Cargo, Poetry, uv) in
// format_manifests_toml.go, the line-structured ones (yarn, Bundler, Mix,
// pub, CocoaPods) in format_manifests_text.go. Samples of each, written by
// the producer, are in testdata/manifests/<Name>/ (SOURCES.md there says
// where each is from), and FuzzParseManifest fuzzes every parser.

// dataFormats is the registry of data formats, asked in this order (two
// formats that share a name, yarn's two, are told apart by their bytes).
var dataFormats = []*DataFormat{
	&dataCargo, &dataYarnV1, &dataYarnBerry, &dataBundler, &dataNix, &dataPoetry,
	&dataComposer, &dataPipenv, &dataMix, &dataPub, &dataCocoaPods, &dataDeno,
	&dataUV, &dataBun, &dataRenv,
}

var manifestFuzz = []string{"scan:FuzzParseManifest"}

var dataNix = DataFormat{
	Name: "nix", Producer: "Nix", What: "a Nix flake's input pins", Room: "format_manifests.go",
	Names: []string{"flake.lock"}, Parse: parseFlakeLock, Fuzz: manifestFuzz,
	Source: "NixOS/nix src/libflake/lockfile.cc (LockFile::LockFile reads \"version\" 5 to 7, \"nodes\" and \"root\"; LockFile::toJSON writes them)",
}

// parseFlakeLock: a JSON object with "nodes" (an object of objects),
// "root" (the name of one of them) and "version" (a positive integer).
func parseFlakeLock(b []byte) error {
	m, err := jsonObject(b)
	if err != nil {
		return err
	}
	nodes, err := jsonObjects(m, "nodes")
	if err != nil {
		return err
	}
	root, err := jsonString(m, "root")
	if err != nil {
		return err
	}
	if _, ok := nodes[root]; !ok {
		return errors.New(`"root" names no node`)
	}
	if v, err := jsonInt(m, "version"); err != nil || v < 1 {
		return errors.New(`no positive integer "version"`)
	}
	return nil
}

var dataComposer = DataFormat{
	Name: "composer", Producer: "Composer", What: "Composer's dependency pins", Room: "format_manifests.go",
	Names: []string{"composer.lock"}, Parse: parseComposerLock, Fuzz: manifestFuzz,
	Source: "composer/composer src/Composer/Package/Locker.php (setLockData: \"content-hash\", \"packages\", \"packages-dev\", ...)",
}

// parseComposerLock: a JSON object with a "content-hash" string and a
// "packages" array of objects each with a "name" and a "version";
// "packages-dev", when there, is such an array too (or null).
func parseComposerLock(b []byte) error {
	m, err := jsonObject(b)
	if err != nil {
		return err
	}
	if h, err := jsonString(m, "content-hash"); err != nil || h == "" {
		return errors.New(`no "content-hash"`)
	}
	for _, k := range []string{"packages", "packages-dev"} {
		raw, ok := m[k]
		if !ok && k == "packages-dev" || ok && k == "packages-dev" && string(raw) == "null" {
			continue
		}
		var pkgs []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &pkgs); err != nil {
			return fmt.Errorf("%q is not an array of objects", k)
		}
		for _, p := range pkgs {
			if _, err := jsonString(p, "name"); err != nil {
				return err
			}
			if _, err := jsonString(p, "version"); err != nil {
				return err
			}
		}
	}
	return nil
}

var dataPipenv = DataFormat{
	Name: "pipenv", Producer: "Pipenv", What: "Pipenv's dependency pins", Room: "format_manifests.go",
	Names: []string{"Pipfile.lock"}, Parse: parsePipfileLock, Fuzz: manifestFuzz,
	Source: "pypa/pipenv pipenv/utils/lockfile.py (the \"_meta\" with \"hash\" and \"pipfile-spec\", then \"default\" and \"develop\")",
}

// parsePipfileLock: a JSON object with "_meta" (an object with a "hash"
// object and an integer "pipfile-spec") and "default" (an object of
// objects); "develop", when there, is one too.
func parsePipfileLock(b []byte) error {
	m, err := jsonObject(b)
	if err != nil {
		return err
	}
	meta, err := jsonObj(m, "_meta")
	if err != nil {
		return err
	}
	if _, err := jsonInt(meta, "pipfile-spec"); err != nil {
		return err
	}
	if _, err := jsonObj(meta, "hash"); err != nil {
		return err
	}
	if _, err := jsonObjects(m, "default"); err != nil {
		return err
	}
	if _, ok := m["develop"]; ok {
		if _, err := jsonObjects(m, "develop"); err != nil {
			return err
		}
	}
	return nil
}

var dataDeno = DataFormat{
	Name: "deno", Producer: "Deno", What: "Deno's dependency pins", Room: "format_manifests.go",
	Names: []string{"deno.lock"}, Parse: parseDenoLock, Fuzz: manifestFuzz,
	Source: "denoland/deno libs/lockfile (formerly denoland/deno_lockfile): printer.rs, struct LockfileV5: \"version\", \"specifiers\", \"jsr\", \"npm\", \"redirects\", \"remote\", \"workspace\" (\"packages\" in version 3)",
}

// denoKeys are the top-level keys deno's lockfile has had besides
// "version" ("packages" in version 3).
var denoKeys = map[string]bool{"specifiers": true, "jsr": true, "npm": true, "redirects": true, "remote": true, "workspace": true, "packages": true}

// parseDenoLock: a JSON object whose "version" is a string of digits and
// whose every other key is one of deno's, each an object.
func parseDenoLock(b []byte) error {
	m, err := jsonObject(b)
	if err != nil {
		return err
	}
	v, err := jsonString(m, "version")
	if err != nil || v == "" || len(v) > 3 || !isDigits(v) {
		return errors.New(`no "version" of digits`)
	}
	for k, raw := range m {
		if k == "version" {
			continue
		}
		var o map[string]json.RawMessage
		if !denoKeys[k] || json.Unmarshal(raw, &o) != nil || o == nil {
			return fmt.Errorf("%q is not deno's", k)
		}
	}
	return nil
}

var dataRenv = DataFormat{
	Name: "renv", Producer: "renv", What: "an R project's package pins (renv)", Room: "format_manifests.go",
	Names: []string{"renv.lock"}, Parse: parseRenvLock, Fuzz: manifestFuzz,
	Source: "rstudio/renv R/lockfile-write.R and R/lockfile-validate.R (an \"R\" object with \"Version\", and \"Packages\", each with \"Package\" and \"Version\")",
}

// parseRenvLock: a JSON object with "R" (an object with a "Version"
// string) and "Packages" (an object of objects each with a "Package"
// string, its key, and a "Version" string).
func parseRenvLock(b []byte) error {
	m, err := jsonObject(b)
	if err != nil {
		return err
	}
	r, err := jsonObj(m, "R")
	if err != nil {
		return err
	}
	if _, err := jsonString(r, "Version"); err != nil {
		return err
	}
	pkgs, err := jsonObjects(m, "Packages")
	if err != nil {
		return err
	}
	for k, p := range pkgs {
		if name, err := jsonString(p, "Package"); err != nil || name != k {
			return fmt.Errorf("package %q: no matching \"Package\"", k)
		}
		if _, err := jsonString(p, "Version"); err != nil {
			return err
		}
	}
	return nil
}

var dataBun = DataFormat{
	Name: "bun", Producer: "Bun", What: "Bun's dependency pins", Room: "format_manifests.go",
	Names: []string{"bun.lock"}, Parse: parseBunLock, Fuzz: manifestFuzz,
	Source: "oven-sh/bun src/install/lockfile/bun.lock.zig (Stringifier: JSON with trailing commas; \"lockfileVersion\", \"workspaces\", \"packages\")",
}

// parseBunLock: JSON as bun writes it, with a comma after the last member
// of an object or array, whose top-level object has an integer
// "lockfileVersion", a "workspaces" object of objects and, when there, a
// "packages" object of arrays.
func parseBunLock(b []byte) error {
	j, err := dropTrailingCommas(b)
	if err != nil {
		return err
	}
	m, err := jsonObject(j)
	if err != nil {
		return err
	}
	if v, err := jsonInt(m, "lockfileVersion"); err != nil || v < 0 {
		return errors.New(`no "lockfileVersion"`)
	}
	if _, err := jsonObjects(m, "workspaces"); err != nil {
		return err
	}
	if raw, ok := m["packages"]; ok {
		var pkgs map[string][]json.RawMessage
		if err := json.Unmarshal(raw, &pkgs); err != nil || pkgs == nil {
			return errors.New(`"packages" is not an object of arrays`)
		}
		for k, p := range pkgs {
			var id string
			if len(p) == 0 || json.Unmarshal(p[0], &id) != nil || id == "" {
				return fmt.Errorf("package %q has no id", k)
			}
		}
	}
	return nil
}

// dropTrailingCommas removes, outside strings, each comma that only
// whitespace separates from a closing } or ]: bun's JSON with trailing
// commas made plain JSON. Anything else is left for the JSON parser.
func dropTrailingCommas(b []byte) ([]byte, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("not UTF-8")
	}
	out := make([]byte, 0, len(b))
	var q quoted
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case q.inside(c):
		case c == ',':
			j := i + 1
			for j < len(b) && (b[j] == ' ' || b[j] == '\n' || b[j] == '\t' || b[j] == '\r') {
				j++
			}
			if j < len(b) && (b[j] == '}' || b[j] == ']') {
				continue
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// quoted follows "strings", with their \ escapes, through bytes read in
// order.
type quoted struct{ in, esc bool }

// inside says whether c is part of a string, its quotes included.
func (q *quoted) inside(c byte) bool {
	switch {
	case q.in:
		switch {
		case q.esc:
			q.esc = false
		case c == '\\':
			q.esc = true
		case c == '"':
			q.in = false
		}
		return true
	case c == '"':
		q.in = true
		return true
	}
	return false
}

// jsonObject parses b, which must be exactly one JSON object.
func jsonObject(b []byte) (map[string]json.RawMessage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// jsonObj is the member k of m, which must be an object.
func jsonObj(m map[string]json.RawMessage, k string) (map[string]json.RawMessage, error) {
	var o map[string]json.RawMessage
	if err := json.Unmarshal(m[k], &o); err != nil || o == nil {
		return nil, fmt.Errorf("%q is not an object", k)
	}
	return o, nil
}

// jsonObjects is the member k of m, which must be an object of objects.
func jsonObjects(m map[string]json.RawMessage, k string) (map[string]map[string]json.RawMessage, error) {
	var o map[string]map[string]json.RawMessage
	if err := json.Unmarshal(m[k], &o); err != nil || o == nil {
		return nil, fmt.Errorf("%q is not an object of objects", k)
	}
	for _, v := range o {
		if v == nil {
			return nil, fmt.Errorf("%q is not an object of objects", k)
		}
	}
	return o, nil
}

// jsonString is the member k of m, which must be a string.
func jsonString(m map[string]json.RawMessage, k string) (string, error) {
	var s string
	raw, ok := m[k]
	if !ok || len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%q is not a string", k)
	}
	return s, nil
}

// jsonInt is the member k of m, which must be an integer.
func jsonInt(m map[string]json.RawMessage, k string) (int64, error) {
	var n int64
	if raw := m[k]; len(raw) == 0 || raw[0] == 'n' || json.Unmarshal(raw, &n) != nil {
		return 0, fmt.Errorf("%q is not an integer", k)
	}
	return n, nil
}

package lint

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The house's limits (issue 29): a production file longer than maxFileLines
// holds more than one topic; a function longer than maxFuncLines (from its
// func line to its closing brace) hides steps that want names.
const (
	maxFileLines = 700
	maxFuncLines = 80
)

// TestRoomSizes parses every production Go file of the module (not tests,
// not testdata, not the tooling under internal/dev) and fails for each
// file over maxFileLines lines and each function over maxFuncLines, naming
// them.
func TestRoomSizes(t *testing.T) {
	root := moduleRoot(t)
	found, err := oversized(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: %d lines, over the limit of %d: split it by topic, or name its steps", f.name, f.lines, f.limit)
	}
}

// room is a file or function and its length in lines.
type room struct {
	name         string
	lines, limit int
}

// oversized walks the module under root and returns every production file
// and function over its limit, sorted by name.
func oversized(root string) ([]room, error) {
	var found []room
	fset := token.NewFileSet()
	err := eachProductionFile(root, nil, func(rel, path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := lineCount(b); n > maxFileLines {
			found = append(found, room{rel, n, maxFileLines})
		}
		f, err := parser.ParseFile(fset, path, b, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				found = append(found, room{rel + ": " + funcName(fd), n, maxFuncLines})
			}
		}
		return nil
	})
	sort.Slice(found, func(i, j int) bool { return found[i].name < found[j].name })
	return found, err
}

// eachProductionFile calls fn with every production Go file of the module
// under root (not tests, not testdata, not hidden or _ folders, not the
// tooling under internal/dev, nor a folder skip names), by its
// slash-separated path relative to root and its path.
func eachProductionFile(root string, skip func(rel string) bool, fn func(rel, path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" || rel == "internal/dev" || skip != nil && skip(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		return fn(rel, path)
	})
}

// lineCount counts lines as wc -l does, and a last line without a newline.
func lineCount(b []byte) int {
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// funcName is fd's name, a method's as Type.Method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr: // a generic type's method
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fmt.Sprintf("%T.%s", typ, fd.Name.Name)
	}
}

// moduleRoot is the directory of the module's go.mod, above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

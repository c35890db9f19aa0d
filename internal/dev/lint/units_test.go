package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestNoFormatBranchOutsideUnits is issue 43's static check: a format is
// one unit, so no production code outside the units names a format. The
// units are package scan's rooms, scan/format_<name>.go, and, where a
// producer's rule needs the judge, verdict/rule_<name>.go. Everyone else
// asks the lock's unit (scan.UnitOf and what it answers); it fails for
// each use of a Format or Producer constant declared in a room.
//
// Two kinds of code may name them: the shapes any lock's bytes can take
// (scan.FormatEmpty, FormatNoPid, FormatUnrecognized, declared outside the
// rooms, in scan/lock.go), and package lock, which is lockctl's own lock
// code: it writes the lockctl format, as git writes git's.
func TestNoFormatBranchOutsideUnits(t *testing.T) {
	root := moduleRoot(t)
	named, err := roomConstants(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(named) < 10 {
		t.Fatalf("found only %d format constants in scan's rooms: the check reads the wrong files", len(named))
	}
	found, err := formatNamesOutsideUnits(root, named)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: names the format constant %s outside its unit: ask the lock's unit (scan.UnitOf) instead, or move the branch into scan/format_<name>.go or verdict/rule_<name>.go", f.at, f.name)
	}
}

// formatConst is a format's constant: Format<X> or Producer<X>.
var formatConst = regexp.MustCompile(`^(Format|Producer)[A-Z]`)

// isUnit says the module file rel (slash-separated) is a format's unit.
func isUnit(rel string) bool {
	dir, base := filepath.Split(rel)
	return dir == "scan/" && strings.HasPrefix(base, "format_") ||
		dir == "verdict/" && strings.HasPrefix(base, "rule_")
}

// roomConstants are the Format and Producer constants declared in scan's
// rooms.
func roomConstants(root string) (map[string]bool, error) {
	named := map[string]bool{}
	files, err := filepath.Glob(filepath.Join(root, "scan", "format_*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					if formatConst.MatchString(n.Name) {
						named[n.Name] = true
					}
				}
			}
		}
	}
	return named, nil
}

// use is one use of a format's constant.
type use struct{ at, name string }

// formatNamesOutsideUnits finds every use of a constant of named in the
// production code outside the units, package lock and internal/dev.
func formatNamesOutsideUnits(root string, named map[string]bool) ([]use, error) {
	var found []use
	fset := token.NewFileSet()
	lockPkg := func(rel string) bool { return rel == "lock" }
	err := eachProductionFile(root, lockPkg, func(rel, path string) error {
		if isUnit(rel) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		inScan := f.Name.Name == "scan"
		ast.Inspect(f, func(n ast.Node) bool {
			var id *ast.Ident
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "scan" {
					id = n.Sel
				}
			case *ast.Ident:
				if inScan {
					id = n
				}
			}
			if id != nil && named[id.Name] {
				found = append(found, use{fset.Position(id.Pos()).String(), id.Name})
			}
			return true
		})
		return nil
	})
	for i := range found {
		found[i].at = strings.TrimPrefix(found[i].at, root+string(filepath.Separator))
	}
	sort.Slice(found, func(i, j int) bool { return found[i].at < found[j].at })
	return found, err
}

package verdict

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/scan"
)

// TestGoneOnlyProved: a gone verdict is made in one place, proved
// (premise.go), from facts that each name their source. Anywhere else in
// package verdict, Gone may only be compared with, never given: so a new
// rule cannot conclude gone without saying what it rests on.
func TestGoneOnlyProved(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "premise.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		allowed := map[*ast.Ident]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op == token.EQL || n.Op == token.NEQ {
					for _, e := range []ast.Expr{n.X, n.Y} {
						if id, ok := e.(*ast.Ident); ok {
							allowed[id] = true
						}
					}
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if id, ok := e.(*ast.Ident); ok {
						allowed[id] = true
					}
				}
			case *ast.GenDecl:
				// The verdicts' own declarations: the constant, All and
				// heldness (verdict.go).
				if name == "verdict.go" {
					ast.Inspect(n, func(m ast.Node) bool {
						if id, ok := m.(*ast.Ident); ok {
							allowed[id] = true
						}
						return true
					})
					return false
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == "Gone" && !allowed[id] {
				t.Errorf("%s: Gone is given outside proved (premise.go): conclude it with proved and the facts it rests on", fset.Position(id.Pos()))
			}
			return true
		})
	}
}

// TestProvedNeedsEveryPremiseCovered: proved concludes gone only when every
// fact's source covers the holder; one fact with a gap makes the verdict
// unknown, naming that premise, its source and the gap, whatever the others
// say; and a gone result whose facts grew a doubt afterwards (a kernel lock
// asked about last) is unknown too and removes nothing.
func TestProvedNeedsEveryPremiseCovered(t *testing.T) {
	covered := Fact{NoProcess, "pidfd_open in this pid namespace", ""}
	partial := Fact{NoKernelLock, "/proc/locks read in a child pid namespace", "lists only that namespace's locks"}
	for _, tc := range []struct {
		name  string
		facts []Fact
		want  Verdict
	}{
		{"every-premise-covered", []Fact{covered, {OtherBoot, "procfs's boot_id", ""}}, Gone},
		{"one-partial", []Fact{covered, partial}, Unknown},
		{"only-partial", []Fact{partial}, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jd := proved(judged{}, "pid 4242 is not running", tc.facts...)
			if jd.v != tc.want {
				t.Errorf("proved(%v) = %s (%s), want %s", tc.facts, jd.v, jd.reason, tc.want)
			}
			if tc.want == Unknown && !strings.Contains(jd.reason, "that no process holds a kernel lock on it is not proved: lists only that namespace's locks (/proc/locks read in a child pid namespace)") {
				t.Errorf("proved(%v).reason = %q, want it to name the premise, its source and the gap", tc.facts, jd.reason)
			}
			if len(jd.facts) != len(tc.facts) {
				t.Errorf("proved kept %d facts, want %d", len(jd.facts), len(tc.facts))
			}
		})
	}
	r := Result{Lock: &scan.Lock{}, Verdict: Gone, Reason: "pid 4242 is not running", Remove: []Step{{Op: OpRemove, Path: "/x"}}, Facts: []Fact{covered, partial}}
	if got := r.reprove(); got.Verdict != Unknown || got.Remove != nil {
		t.Errorf("reprove of a gone result with a doubt among its facts = %s, remove %v; want unknown, nothing removed", got.Verdict, got.Remove)
	}
}

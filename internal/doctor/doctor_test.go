//go:build linux

package doctor_test

import (
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/doctor"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// sink collects what a run hands it.
type sink struct {
	results  []verdict.Result
	outcomes []*fix.Outcome
}

func (s *sink) Lock(res verdict.Result, o *fix.Outcome) {
	s.results = append(s.results, res)
	s.outcomes = append(s.outcomes, o)
}

func (s *sink) Streams() bool { return false }

// run runs doctor --fix over dir with judge and fixer.
func run(t *testing.T, dir string, judge *verdict.Judge, fixer *fix.Fixer) *sink {
	t.Helper()
	m, err := scan.NewMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{}
	res := doctor.Run(doctor.Options{Host: judges.Host(), Judge: judge, Paths: []string{dir}, Named: true, Match: m, Workers: 1, Fixer: fixer}, s)
	if len(res.Errors) > 0 {
		t.Fatalf("doctor.Run(%s): %v", dir, res.Errors)
	}
	if len(s.results) != 1 {
		t.Fatalf("doctor.Run(%s) handed %d locks to the sink, want 1", dir, len(s.results))
	}
	return s
}

// TestRunWithoutJudgesFailsClosed: a run given no judge, and a fixer given
// none, judge a lock whose holder is gone as unknown, and remove nothing;
// wired with judges, the same run removes it.
func TestRunWithoutJudgesFailsClosed(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x.lock")
	testutil.WriteFile(t, p, testutil.FileRec(testutil.Gone(t)))
	before := testutil.Snapshot(t, dir)

	s := run(t, dir, nil, fix.New(nil))
	if v := s.results[0].Verdict; v != verdict.Unknown {
		t.Errorf("with no judge, %s is judged %s (%s), want unknown", p, v, s.results[0].Reason)
	}
	if o := s.outcomes[0]; o == nil || o.Action == fix.Removed {
		t.Errorf("with no judges, --fix did %+v, want nothing removed", o)
	}
	testutil.SameTree(t, dir, before)

	host := judges.Host()
	s = run(t, dir, judges.Doctor(host, true), fix.New(judges.Sweep(host)))
	if v, o := s.results[0].Verdict, s.outcomes[0]; v != verdict.Gone || o == nil || o.Action != fix.Removed {
		t.Errorf("wired, %s is judged %s and --fix did %+v, want it gone and removed", p, v, o)
	}
	testutil.WantNames(t, dir)
}

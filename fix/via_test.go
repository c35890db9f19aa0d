//go:build linux

package fix_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// TestSweepVia: a lock judged gone on another host (Result.Remote) is
// claimed here and removed only when that host, asked again about the
// claimed record (Fixer.Rejudge), answers gone; any other answer puts it
// back byte for byte. The far end is asked about the claim beside the
// lock, with the claimed bytes. Red when the removal does not wait for the
// host's second answer (mutant via-fix-no-rejudge).
func TestSweepVia(t *testing.T) {
	host := testHost(t)
	for _, c := range []struct {
		name   string
		answer verdict.Verdict
		want   fix.Action
		reason string
	}{
		{"gone again", verdict.Gone, fix.Removed, "judged it again and removed"},
		{"live again", verdict.Live, fix.Kept, "the record was put back"},
		{"no answer", verdict.Unknown, fix.Kept, "the record was put back"},
		{"foreign", verdict.Foreign, fix.Kept, "the record was put back"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := tempDir(t)
			rec := fileRec(testutil.Gone(t))
			lock := mkFile(t, dir, "a.lock", rec)
			res := judge(t, dir, lock, verdict.Gone)
			res.Remote = "hostb"
			ino := inode(t, lock)
			f := fix.New(judges.Sweep(host))
			asked := 0
			f.Rejudge = func(h string, l *scan.Lock, got scan.Record, claim string) verdict.Result {
				asked++
				if h != "hostb" || l.Path != lock || string(got.Raw) != string(rec) ||
					filepath.Dir(claim) != dir || !strings.HasPrefix(filepath.Base(claim), "a.lock.dead.") || !exists(claim) || exists(lock) {
					t.Errorf("Rejudge(%s, %s, %q, %s): want hostb, %s, its bytes, and a claim beside it standing in its place", h, l.Path, got.Raw, claim, lock)
				}
				return verdict.Result{Verdict: c.answer, Reason: "the far end says so"}
			}
			wantOutcome(t, lock, f.Fix(res), c.want, c.reason)
			if asked != 1 {
				t.Errorf("the host was asked again %d times, want once", asked)
			}
			if c.want == fix.Removed {
				if exists(lock) {
					t.Errorf("%s is still there", lock)
				}
			} else {
				wantFile(t, lock, rec, ino)
			}
			noDebris(t, dir)
		})
	}
}

// TestSweepViaNeedsRejudge: without a Rejudge (doctor --fix without
// --via, or a lock judged on another host otherwise), a lock judged on
// another host is kept untouched.
func TestSweepViaNeedsRejudge(t *testing.T) {
	host := testHost(t)
	dir := tempDir(t)
	lock := mkFile(t, dir, "a.lock", fileRec(testutil.Gone(t)))
	res := judge(t, dir, lock, verdict.Gone)
	res.Remote = "hostb"
	before := testutil.Snapshot(t, dir)
	wantOutcome(t, lock, fix.New(judges.Sweep(host)).Fix(res), fix.Kept, "run 'lockctl doctor --fix")
	testutil.SameTree(t, dir, before)
}

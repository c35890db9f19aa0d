//go:build linux

package fix_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Each test names, in its comment, the step of the protocol in fix.go it
// guards: 1 claim, 2 verify, 3 judge again, 4 remove, and the rollback with
// RENAME_NOREPLACE.

// A lock maker builds one lock for the holder pid inside dir and returns the
// lock's path and the path and bytes of its holder record.
type maker func(t *testing.T, h verdict.Host, dir string, pid int) (lock, record string, rec []byte)

func makeA(t *testing.T, h verdict.Host, dir string, pid int) (string, string, []byte) {
	rec := testutil.RecA(pid, h.Name)
	lock := mkGenA(t, dir, "x.lock", rec)
	return lock, lock + ".holder", rec
}

func makeB(t *testing.T, h verdict.Host, dir string, pid int) (string, string, []byte) {
	tok := testutil.TokenB(pid, 7)
	rec := testutil.RecB(tok, pid, h.Name, h.Scope)
	lock := mkGenB(t, dir, "x.lock", tok, rec)
	return lock, filepath.Join(lock, "holder."+tok), rec
}

// makeFile makes a lock file that lockctl claims (fileRec).
func makeFile(t *testing.T, _ verdict.Host, dir string, pid int) (string, string, []byte) {
	rec := fileRec(pid)
	lock := mkFile(t, dir, "x.lock", rec)
	return lock, lock, rec
}

func makePid(t *testing.T, _ verdict.Host, dir string, pid int) (string, string, []byte) {
	rec := testutil.PidRec(pid)
	lock := mkFile(t, dir, "x.lock", rec)
	return lock, lock, rec
}

func makeUUCP(t *testing.T, _ verdict.Host, dir string, pid int) (string, string, []byte) {
	rec := uucpRec(pid)
	lock := mkFile(t, dir, "LCK..ttyS0", rec)
	return lock, lock, rec
}

// TestSweepEachFormat guards the whole protocol end to end, claim → verify →
// judge again → remove, down to step 4's removal of the claim itself: a lock
// whose holder is provably gone (reaped, or a zombie) is removed in every
// format, holder record included, and no claim is left behind.
func TestSweepEachFormat(t *testing.T) {
	host := testHost(t)
	zombie := func(t testutil.T) int { return testutil.Zombie(t).Process.Pid }
	tests := []struct {
		name   string
		make   maker
		holder func(testutil.T) int
	}{
		{"registry-a", makeA, testutil.Gone},
		{"registry-b", makeB, testutil.Gone},
		{"filelock", makeFile, testutil.Gone},
		{"registry-a zombie", makeA, zombie},
		{"registry-b zombie", makeB, zombie},
		{"filelock zombie", makeFile, zombie},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempDir(t)
			lock, _, _ := tt.make(t, host, dir, tt.holder(t))
			res := judge(t, dir, lock, verdict.Gone)

			o := fix.New(judges.Sweep(host)).Fix(res)

			wantOutcome(t, lock, o, fix.Removed, "was gone")
			if o.Conflict != "" {
				t.Errorf("Fix(%s).Conflict = %q, want none", lock, o.Conflict)
			}
			if left := names(t, dir); len(left) > 0 {
				t.Errorf("after Fix(%s) the registry still holds %q, want nothing", lock, left)
			}
		})
	}
}

// TestSweepSkipsWhatIsNotGone guards the gate in front of step 1: only gone
// locks are swept. Live, owner-less, foreign, unknown and recycled locks are
// skipped without a single file changed, not even renamed and put back. Where
// the pid is gone the verdict alone keeps the lock safe, so these fail if Fix
// sweeps anything but gone locks.
func TestSweepSkipsWhatIsNotGone(t *testing.T) {
	host := testHost(t)
	live := testutil.Sleeper(t).Process.Pid
	gone := testutil.Gone(t)
	tests := []struct {
		name string
		want verdict.Verdict
		make func(t *testing.T, dir string) string
	}{
		{"live registry-a", verdict.Live, func(t *testing.T, dir string) string {
			l, _, _ := makeA(t, host, dir, live)
			return l
		}},
		{"live registry-b", verdict.Live, func(t *testing.T, dir string) string {
			l, _, _ := makeB(t, host, dir, live)
			return l
		}},
		{"live pid", verdict.Live, func(t *testing.T, dir string) string {
			l, _, _ := makePid(t, host, dir, live)
			return l
		}},
		{"live uucp", verdict.Live, func(t *testing.T, dir string) string {
			l, _, _ := makeUUCP(t, host, dir, live)
			return l
		}},
		{"ownerless empty directory", verdict.Ownerless, func(t *testing.T, dir string) string {
			return mkGenA(t, dir, "x.lock", nil)
		}},
		{"ownerless pid file 0", verdict.Ownerless, func(t *testing.T, dir string) string {
			return mkFile(t, dir, "x.lock", []byte("0\n"))
		}},
		{"ownerless empty pid file", verdict.Ownerless, func(t *testing.T, dir string) string {
			return mkFile(t, dir, "x.lock", nil)
		}},
		{"ownerless registry-a holder older than its directory", verdict.Ownerless, func(t *testing.T, dir string) string {
			// A gone holder's record left beside a directory made since by
			// someone who has not written a record yet.
			lock := mkGenA(t, dir, "x.lock", testutil.RecA(gone, host.Name))
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(lock+".holder", old, old); err != nil {
				t.Fatal(err)
			}
			return lock
		}},
		{"ownerless malformed registry-a holder", verdict.Ownerless, func(t *testing.T, dir string) string {
			return mkGenA(t, dir, "x.lock", fmt.Appendf(nil, "pid %d\n", gone))
		}},
		{"foreign host", verdict.Foreign, func(t *testing.T, dir string) string {
			return mkGenA(t, dir, "x.lock", testutil.RecA(gone, "elsewhere"))
		}},
		{"foreign scope", verdict.Foreign, func(t *testing.T, dir string) string {
			tok := testutil.TokenB(gone, 1)
			scope := verdict.ScopeDigest("another-machine", host.BootID, host.PidNS)
			return mkGenB(t, dir, "x.lock", tok, testutil.RecB(tok, gone, host.Name, scope))
		}},
		{"unknown pid -1", verdict.Unknown, func(t *testing.T, dir string) string {
			return mkGenA(t, dir, "x.lock", []byte("token \npid -1\ncommand x\nhost "+host.Name+"\n"))
		}},
		{"unknown pid file -1", verdict.Unknown, func(t *testing.T, dir string) string {
			return mkFile(t, dir, "x.lock", []byte("-1\n"))
		}},
		{"unknown registry-b without scope", verdict.Unknown, func(t *testing.T, dir string) string {
			tok := testutil.TokenB(gone, 2)
			rec := fmt.Appendf(nil, "token %s\npid %d\ncommand x\nhost %s\n", tok, gone, host.Name)
			return mkGenB(t, dir, "x.lock", tok, rec)
		}},
		{"recycled", verdict.Recycled, func(t *testing.T, dir string) string {
			// The token says the lock was taken an hour ago; the process
			// now at that pid started a moment ago.
			epoch := time.Now().Add(-time.Hour).Unix()
			tok := fmt.Sprintf("%s.%d.%d.%032x", host.Name, live, epoch, 1)
			rec := fmt.Appendf(nil, "token %s\npid %d\ncommand x\nhost %s\n", tok, live, host.Name)
			return mkGenA(t, dir, "x.lock", rec)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempDir(t)
			lock := tt.make(t, dir)
			res := judge(t, dir, lock, tt.want)
			before := testutil.Snapshot(t, dir)

			o := fix.New(judges.Sweep(host)).Fix(res)

			wantOutcome(t, lock, o, fix.Skipped, "")
			testutil.SameTree(t, dir, before)
		})
	}
}

// TestChangeOfHandsBeforeClaim guards step 2, verify: the lock changes hands
// between the judgement and the claim, so the file the claim renames is not
// the record that was judged. Its inode or its bytes differ; the new owner's
// record must go straight back, byte for byte, and the lock stay.
func TestChangeOfHandsBeforeClaim(t *testing.T) {
	host := testHost(t)
	live := testutil.Sleeper(t).Process.Pid
	tests := []struct {
		name string
		make maker
		// change changes the record at path and returns the bytes and inode
		// that must stand there afterwards.
		change func(t *testing.T, path string, old []byte) ([]byte, uint64)
	}{
		{"registry-a, a new record renamed over it", makeA, func(t *testing.T, path string, _ []byte) ([]byte, uint64) {
			rec := testutil.RecA(live, host.Name)
			return rec, replaceFile(t, path, rec)
		}},
		{"registry-a, rewritten in place", makeA, func(t *testing.T, path string, _ []byte) ([]byte, uint64) {
			rec := testutil.RecA(live, host.Name)
			testutil.WriteFile(t, path, rec)
			return rec, inode(t, path)
		}},
		{"registry-a, the same bytes in a new file", makeA, func(t *testing.T, path string, old []byte) ([]byte, uint64) {
			return old, replaceFile(t, path, old)
		}},
		{"filelock, a new lock file renamed over it", makeFile, func(t *testing.T, path string, _ []byte) ([]byte, uint64) {
			rec := fileRec(live)
			return rec, replaceFile(t, path, rec)
		}},
		{"filelock, rewritten in place", makeFile, func(t *testing.T, path string, _ []byte) ([]byte, uint64) {
			rec := fileRec(live)
			testutil.WriteFile(t, path, rec)
			return rec, inode(t, path)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempDir(t)
			lock, record, old := tt.make(t, host, dir, testutil.Gone(t))
			res := judge(t, dir, lock, verdict.Gone)
			lockIno := inode(t, lock)
			var rec []byte
			var ino uint64
			f := fix.New(judges.Sweep(host))
			f.Hook = at(t, fix.BeforeClaim, func(*scan.Lock) { rec, ino = tt.change(t, record, old) })

			o := f.Fix(res)

			wantOutcome(t, lock, o, fix.Kept, "the record was put back")
			if o.Conflict != "" {
				t.Errorf("Fix(%s).Conflict = %q, want none", lock, o.Conflict)
			}
			wantFile(t, record, rec, ino)
			if got := inode(t, lock); lock != record && got != lockIno {
				t.Errorf("%s is inode %d, want %d", lock, got, lockIno)
			}
			noDebris(t, dir)
		})
	}
}

// TestNewOwnerAfterClaim guards step 1, claim: a pid lock is free from the
// moment its file is claimed, and a new owner may take it (here by renaming
// its own file into place) before the sweeper removes anything. The removal
// must take the claimed file, not whatever now stands at the lock's path.
func TestNewOwnerAfterClaim(t *testing.T) {
	host := testHost(t)
	dir := tempDir(t)
	lock, _, _ := makeFile(t, host, dir, testutil.Gone(t))
	res := judge(t, dir, lock, verdict.Gone)
	rec := fileRec(testutil.Sleeper(t).Process.Pid)
	var ino uint64
	f := fix.New(judges.Sweep(host))
	f.Hook = at(t, fix.BeforeRemove, func(*scan.Lock) { ino = replaceFile(t, lock, rec) })

	o := f.Fix(res)

	wantOutcome(t, lock, o, fix.Removed, "was gone")
	wantFile(t, lock, rec, ino)
	noDebris(t, dir)
}

// TestJudgeAgain guards step 3, judge again: the claimed record is judged
// once more, and the kernel asked afresh. Here the scan judged the holder
// gone with the real kernel, and the Fixer's own probe now says it runs: the
// lock is kept and every file is back exactly as it was.
func TestJudgeAgain(t *testing.T) {
	host := testHost(t)
	for _, tt := range []struct {
		name string
		make maker
	}{{"registry-a", makeA}, {"registry-b", makeB}, {"filelock", makeFile}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempDir(t)
			lock, _, _ := tt.make(t, host, dir, testutil.Gone(t))
			res := judge(t, dir, lock, verdict.Gone)
			before := testutil.Snapshot(t, dir)
			f := &fix.Fixer{Judge: &verdict.Judge{Host: host, Probe: runningProbe{}}, Pid: os.Getpid()}

			o := f.Fix(res)

			wantOutcome(t, lock, o, fix.Kept, "judged again, the holder is live")
			if o.Conflict != "" {
				t.Errorf("Fix(%s).Conflict = %q, want none", lock, o.Conflict)
			}
			testutil.SameTree(t, dir, before)
		})
	}
}

// TestRmdirFailureRollsBack guards step 4, remove, and the rollback after
// it: rmdir only removes an empty directory, so an entry made inside the
// lock after the claim keeps the lock, and the record goes back to its place
// (the same inode, the same bytes).
func TestRmdirFailureRollsBack(t *testing.T) {
	host := testHost(t)
	for _, tt := range []struct {
		name string
		make maker
	}{{"registry-a", makeA}, {"registry-b", makeB}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempDir(t)
			lock, record, rec := tt.make(t, host, dir, testutil.Gone(t))
			res := judge(t, dir, lock, verdict.Gone)
			recIno, lockIno := inode(t, record), inode(t, lock)
			intruder := filepath.Join(lock, "intruder")
			f := fix.New(judges.Sweep(host))
			f.Hook = at(t, fix.BeforeRemove, func(*scan.Lock) { testutil.WriteFile(t, intruder, []byte("new\n")) })

			o := f.Fix(res)

			wantOutcome(t, lock, o, fix.Kept, "no longer empty")
			if o.Conflict != "" {
				t.Errorf("Fix(%s).Conflict = %q, want none", lock, o.Conflict)
			}
			wantFile(t, record, rec, recIno)
			wantFile(t, intruder, []byte("new\n"), 0)
			if got := inode(t, lock); got != lockIno {
				t.Errorf("%s is inode %d, want %d", lock, got, lockIno)
			}
			noDebris(t, dir)
		})
	}
}

// TestRollbackNeverReplaces guards the rollback with RENAME_NOREPLACE: when
// the record cannot be removed and something new now stands where it came
// from, the record is not renamed over the newcomer. Both stay, the outcome
// names the claim as a conflict, and nothing is deleted.
func TestRollbackNeverReplaces(t *testing.T) {
	host := testHost(t)
	live := testutil.Sleeper(t).Process.Pid
	t.Run("registry-a", func(t *testing.T) {
		dir := tempDir(t)
		lock, record, old := makeA(t, host, dir, testutil.Gone(t))
		res := judge(t, dir, lock, verdict.Gone)
		oldIno := inode(t, record)
		rec := testutil.RecA(live, host.Name)
		intruder := filepath.Join(lock, "intruder")
		var ino uint64
		f := fix.New(judges.Sweep(host))
		f.Hook = at(t, fix.BeforeRemove, func(*scan.Lock) {
			testutil.WriteFile(t, record, rec) // a new record where the claimed one was
			ino = inode(t, record)
			testutil.WriteFile(t, intruder, nil) // and rmdir fails
		})

		o := f.Fix(res)

		wantConflict(t, lock, o, old, oldIno)
		wantFile(t, record, rec, ino)
		wantFile(t, intruder, nil, 0)
	})
	t.Run("registry-b", func(t *testing.T) {
		dir := tempDir(t)
		lock, record, old := makeB(t, host, dir, testutil.Gone(t))
		res := judge(t, dir, lock, verdict.Gone)
		oldIno := inode(t, record)
		rec := []byte("new\n")
		var ino uint64
		f := fix.New(judges.Sweep(host))
		f.Hook = at(t, fix.BeforeRemove, func(*scan.Lock) {
			// One new file both fails the rmdir and stands in the way back.
			testutil.WriteFile(t, record, rec)
			ino = inode(t, record)
		})

		o := f.Fix(res)

		wantConflict(t, lock, o, old, oldIno)
		wantFile(t, record, rec, ino)
	})
	t.Run("pid", func(t *testing.T) {
		// The residual risk of docs/fix-protocol.md: a pid lock is free once
		// claimed, so a new owner can take it before a failed check puts
		// the old file back.
		dir := tempDir(t)
		lock, _, old := makeFile(t, host, dir, testutil.Gone(t))
		res := judge(t, dir, lock, verdict.Gone)
		oldIno := inode(t, lock)
		rec := fileRec(live)
		var ino uint64
		f := &fix.Fixer{Judge: &verdict.Judge{Host: host, Probe: runningProbe{}}, Pid: os.Getpid()}
		f.Hook = at(t, fix.BeforeJudge, func(*scan.Lock) {
			testutil.WriteFile(t, lock, rec)
			ino = inode(t, lock)
		})

		o := f.Fix(res)

		wantConflict(t, lock, o, old, oldIno)
		wantFile(t, lock, rec, ino)
	})
}

// wantConflict checks a kept outcome that names the one claim beside lock
// as a conflict, and that the claim still holds the judged record.
func wantConflict(t *testing.T, lock string, o fix.Outcome, rec []byte, ino uint64) {
	t.Helper()
	wantOutcome(t, lock, o, fix.Kept, "")
	cs := claims(t, lock)
	if len(cs) != 1 {
		t.Fatalf("after Fix(%s) the claims beside it are %q, want exactly one", lock, cs)
	}
	if o.Conflict != cs[0] {
		t.Errorf("Fix(%s).Conflict = %q, want the claim %q", lock, o.Conflict, cs[0])
	}
	if !strings.Contains(o.Reason, cs[0]) {
		t.Errorf("Fix(%s).Reason = %q, want it to name the claim %q", lock, o.Reason, cs[0])
	}
	wantFile(t, cs[0], rec, ino)
}

// TestLockDirReplacedBeforeRmdir guards step 4's check that the directory
// about to be removed is still the one judged: it was removed and made again
// (by a new owner who has not written a record yet) while the sweeper held
// the claim. rmdir would succeed on the empty newcomer; it must not be run.
func TestLockDirReplacedBeforeRmdir(t *testing.T) {
	host := testHost(t)
	// replaceDir swaps the empty lock directory for a new empty one and
	// returns the new inode.
	replaceDir := func(t *testing.T, lock string) uint64 {
		t.Helper()
		fresh := filepath.Join(t.TempDir(), "fresh")
		testutil.Mkdir(t, fresh)
		if err := os.Remove(lock); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(fresh, lock); err != nil {
			t.Fatal(err)
		}
		return inode(t, lock)
	}
	t.Run("registry-a", func(t *testing.T) {
		dir := tempDir(t)
		lock, record, rec := makeA(t, host, dir, testutil.Gone(t))
		res := judge(t, dir, lock, verdict.Gone)
		var ino uint64
		f := fix.New(judges.Sweep(host))
		f.Hook = at(t, fix.BeforeRemove, func(*scan.Lock) { ino = replaceDir(t, lock) })

		o := f.Fix(res)

		wantOutcome(t, lock, o, fix.Kept, "changed while it was being broken")
		if got := inode(t, lock); got != ino {
			t.Errorf("%s is inode %d, want the new directory %d", lock, got, ino)
		}
		wantFile(t, record, rec, 0)
		noDebris(t, dir)
	})
	t.Run("registry-b", func(t *testing.T) {
		// The record's place was inside the old directory, which is gone:
		// it cannot go back, so the claim stays, named as a conflict.
		dir := tempDir(t)
		lock, record, rec := makeB(t, host, dir, testutil.Gone(t))
		res := judge(t, dir, lock, verdict.Gone)
		recIno := inode(t, record)
		var ino uint64
		f := fix.New(judges.Sweep(host))
		f.Hook = at(t, fix.BeforeRemove, func(*scan.Lock) { ino = replaceDir(t, lock) })

		o := f.Fix(res)

		wantConflict(t, lock, o, rec, recIno)
		if got := inode(t, lock); got != ino {
			t.Errorf("%s is inode %d, want the new directory %d", lock, got, ino)
		}
	})
	t.Run("abandoned break", func(t *testing.T) {
		dir := tempDir(t)
		lock := mkGenA(t, dir, "x.lock", nil)
		claim := fmt.Sprintf("%s.dead.%d.12345", lock, testutil.Gone(t))
		rec := testutil.RecA(testutil.Gone(t), host.Name)
		testutil.WriteFile(t, claim, rec)
		res := judge(t, dir, lock, verdict.Claimed)
		var ino uint64
		f := fix.New(judges.Sweep(host))
		f.Hook = at(t, fix.BeforeRemove, func(*scan.Lock) { ino = replaceDir(t, lock) })

		o := f.Fix(res)

		wantOutcome(t, lock, o, fix.Kept, "changed while the claim was being finished")
		if got := inode(t, lock); got != ino {
			t.Errorf("%s is inode %d, want the new directory %d", lock, got, ino)
		}
		wantFile(t, claim, rec, 0)
		if cs := claims(t, lock); len(cs) != 1 {
			t.Errorf("claims beside %s: %q, want only %s", lock, cs, claim)
		}
	})
}

// TestTwoBreakersOneRecord guards step 1, claim: two sweepers reach the same
// verdict on one dead record. Whichever way they interleave, only the one
// whose rename succeeds removes the lock; the other says it was beaten.
func TestTwoBreakersOneRecord(t *testing.T) {
	host := testHost(t)
	other := testutil.Sleeper(t).Process.Pid // the second sweeper's pid, running as it should be
	formats := []struct {
		name string
		make maker
	}{{"registry-a", makeA}, {"registry-b", makeB}, {"filelock", makeFile}}
	steps := []fix.Step{fix.BeforeOpen, fix.BeforeClaim, fix.BeforeVerify, fix.BeforeJudge, fix.BeforeRemove}
	for _, ft := range formats {
		for _, step := range steps {
			t.Run(fmt.Sprintf("%s, the other runs at %s", ft.name, step), func(t *testing.T) {
				dir := tempDir(t)
				lock, _, _ := ft.make(t, host, dir, testutil.Gone(t))
				res := judge(t, dir, lock, verdict.Gone)
				first, second := fix.New(judges.Sweep(host)), fix.New(judges.Sweep(host))
				second.Pid = other
				var o2 fix.Outcome
				first.Hook = at(t, step, func(*scan.Lock) { o2 = second.Fix(res) })

				o1 := first.Fix(res)

				removed := 0
				for _, o := range []fix.Outcome{o1, o2} {
					switch o.Action {
					case fix.Removed:
						removed++
					case fix.Skipped:
					default:
						t.Errorf("Fix(%s) = %s (%s), want removed or skipped", lock, o.Action, o.Reason)
					}
				}
				if removed != 1 {
					t.Errorf("Fix(%s) twice = %s (%s) and %s (%s), want exactly one removed",
						lock, o1.Action, o1.Reason, o2.Action, o2.Reason)
				}
				if left := names(t, dir); len(left) > 0 {
					t.Errorf("the registry still holds %q, want nothing", left)
				}
			})
		}
	}
}

// TestAbandonedBreak guards the finishing of a claim whose breaker is gone
// (claim → verify → judge again → remove, on the abandoned claim): the break
// is finished when the record's holder is gone too, and the record is put
// back, never replacing, when its holder is alive. A break whose breaker
// runs is under way and left alone.
func TestAbandonedBreak(t *testing.T) {
	host := testHost(t)
	live := testutil.Sleeper(t).Process.Pid
	t.Run("registry-a, gone record", func(t *testing.T) {
		dir := tempDir(t)
		lock := mkGenA(t, dir, "x.lock", nil)
		testutil.WriteFile(t, fmt.Sprintf("%s.dead.%d.12345", lock, testutil.Gone(t)), testutil.RecA(testutil.Gone(t), host.Name))
		res := judge(t, dir, lock, verdict.Claimed)

		o := fix.New(judges.Sweep(host)).Fix(res)

		wantOutcome(t, lock, o, fix.Removed, "finished the abandoned break")
		if left := names(t, dir); len(left) > 0 {
			t.Errorf("the registry still holds %q, want nothing", left)
		}
	})
	t.Run("registry-b, gone record", func(t *testing.T) {
		dir := tempDir(t)
		lock := mkGenA(t, dir, "x.lock", nil)
		pid := testutil.Gone(t)
		tok := testutil.TokenB(pid, 3)
		testutil.WriteFile(t, fmt.Sprintf("%s.dead.%s.%d", lock, tok, testutil.Gone(t)), testutil.RecB(tok, pid, host.Name, host.Scope))
		res := judge(t, dir, lock, verdict.Claimed)

		o := fix.New(judges.Sweep(host)).Fix(res)

		wantOutcome(t, lock, o, fix.Removed, "finished the abandoned break")
		if left := names(t, dir); len(left) > 0 {
			t.Errorf("the registry still holds %q, want nothing", left)
		}
	})
	t.Run("pid, gone record", func(t *testing.T) {
		dir := tempDir(t)
		lock := filepath.Join(dir, "x.lock")
		testutil.WriteFile(t, fmt.Sprintf("%s.dead.%d.12345", lock, testutil.Gone(t)), testutil.PidRec(testutil.Gone(t)))
		res := judge(t, dir, lock, verdict.Claimed)

		o := fix.New(judges.Sweep(host)).Fix(res)

		wantOutcome(t, lock, o, fix.Removed, "finished the abandoned break")
		if left := names(t, dir); len(left) > 0 {
			t.Errorf("the registry still holds %q, want nothing", left)
		}
	})

	restored := []struct {
		name string
		// make builds the abandoned claim and returns the lock, the claim,
		// the record and where it must go back to.
		make func(t *testing.T, dir string) (lock, claim string, rec []byte, to string)
	}{
		{"registry-a", func(t *testing.T, dir string) (string, string, []byte, string) {
			lock := mkGenA(t, dir, "x.lock", nil)
			claim := fmt.Sprintf("%s.dead.%d.12345", lock, testutil.Gone(t))
			return lock, claim, testutil.RecA(live, host.Name), lock + ".holder"
		}},
		{"registry-b", func(t *testing.T, dir string) (string, string, []byte, string) {
			lock := mkGenA(t, dir, "x.lock", nil)
			tok := testutil.TokenB(live, 4)
			claim := fmt.Sprintf("%s.dead.%s.%d", lock, tok, testutil.Gone(t))
			return lock, claim, testutil.RecB(tok, live, host.Name, host.Scope), filepath.Join(lock, "holder."+tok)
		}},
		{"pid", func(t *testing.T, dir string) (string, string, []byte, string) {
			lock := filepath.Join(dir, "x.lock")
			claim := fmt.Sprintf("%s.dead.%d.12345", lock, testutil.Gone(t))
			return lock, claim, testutil.PidRec(live), lock
		}},
	}
	for _, tt := range restored {
		t.Run(tt.name+", live record", func(t *testing.T) {
			dir := tempDir(t)
			lock, claim, rec, to := tt.make(t, dir)
			testutil.WriteFile(t, claim, rec)
			ino := inode(t, claim)
			res := judge(t, dir, lock, verdict.Claimed)

			o := fix.New(judges.Sweep(host)).Fix(res)

			wantOutcome(t, lock, o, fix.Restored, "is alive")
			wantFile(t, to, rec, ino)
			if exists(claim) {
				t.Errorf("the claim %s is still there", claim)
			}
			noDebris(t, dir)
		})
	}
	t.Run("registry-a, live record, something new in its place", func(t *testing.T) {
		dir := tempDir(t)
		lock, claim, rec, to := restored[0].make(t, dir)
		testutil.WriteFile(t, claim, rec)
		ino := inode(t, claim)
		res := judge(t, dir, lock, verdict.Claimed)
		other := []byte("someone else\n")
		var otherIno uint64
		f := fix.New(judges.Sweep(host))
		f.Hook = at(t, fix.BeforeRemove, func(*scan.Lock) {
			testutil.WriteFile(t, to, other)
			otherIno = inode(t, to)
		})

		o := f.Fix(res)

		wantOutcome(t, lock, o, fix.Kept, "something new stands")
		if o.Conflict != claim {
			t.Errorf("Fix(%s).Conflict = %q, want %q", lock, o.Conflict, claim)
		}
		wantFile(t, claim, rec, ino)
		wantFile(t, to, other, otherIno)
	})
	t.Run("breaker alive", func(t *testing.T) {
		dir := tempDir(t)
		lock := mkGenA(t, dir, "x.lock", nil)
		testutil.WriteFile(t, fmt.Sprintf("%s.dead.%d.12345", lock, live), testutil.RecA(testutil.Gone(t), host.Name))
		res := judge(t, dir, lock, verdict.Claimed)
		before := testutil.Snapshot(t, dir)

		o := fix.New(judges.Sweep(host)).Fix(res)

		wantOutcome(t, lock, o, fix.Skipped, "under way")
		testutil.SameTree(t, dir, before)
	})
}

// TestAbandonedRelease guards the finishing of release staging whose
// releaser is gone (claim → verify → judge again → remove, on the staging
// file): the release is finished, lock directory and staging file removed.
// A release whose releaser runs is left alone.
func TestAbandonedRelease(t *testing.T) {
	host := testHost(t)
	t.Run("registry-a", func(t *testing.T) {
		dir := tempDir(t)
		lock := mkGenA(t, dir, "x.lock", nil)
		pid := testutil.Gone(t)
		testutil.WriteFile(t, fmt.Sprintf("%s.holder.releasing.%d", lock, pid), testutil.RecA(pid, host.Name))
		res := judge(t, dir, lock, verdict.Claimed)

		o := fix.New(judges.Sweep(host)).Fix(res)

		wantOutcome(t, lock, o, fix.Removed, "finished the abandoned release")
		if left := names(t, dir); len(left) > 0 {
			t.Errorf("the registry still holds %q, want nothing", left)
		}
	})
	t.Run("registry-b", func(t *testing.T) {
		dir := tempDir(t)
		lock := mkGenA(t, dir, "x.lock", nil)
		pid := testutil.Gone(t)
		tok := testutil.TokenB(pid, 5)
		testutil.WriteFile(t, fmt.Sprintf("%s.rel.%s", lock, tok), testutil.RecB(tok, pid, host.Name, host.Scope))
		res := judge(t, dir, lock, verdict.Claimed)

		o := fix.New(judges.Sweep(host)).Fix(res)

		wantOutcome(t, lock, o, fix.Removed, "finished the abandoned release")
		if left := names(t, dir); len(left) > 0 {
			t.Errorf("the registry still holds %q, want nothing", left)
		}
	})
	t.Run("releaser alive", func(t *testing.T) {
		dir := tempDir(t)
		lock := mkGenA(t, dir, "x.lock", nil)
		pid := testutil.Sleeper(t).Process.Pid
		testutil.WriteFile(t, fmt.Sprintf("%s.holder.releasing.%d", lock, pid), testutil.RecA(pid, host.Name))
		res := judge(t, dir, lock, verdict.Claimed)
		before := testutil.Snapshot(t, dir)

		o := fix.New(judges.Sweep(host)).Fix(res)

		wantOutcome(t, lock, o, fix.Skipped, "")
		testutil.SameTree(t, dir, before)
	})
}

// TestSymlinkSwappedMidSweep guards the descriptors every step works
// through (the registry reopened from / with O_NOFOLLOW at each component,
// records opened with O_NOFOLLOW, renames and removals relative to those
// descriptors): a symbolic link swapped into the path after the judgement
// never leads a removal out of the registry.
func TestSymlinkSwappedMidSweep(t *testing.T) {
	host := testHost(t)
	// setup makes the gone lock reg/sub/x.lock and an identical one at
	// out/sub/x.lock, outside the registry.
	setup := func(t *testing.T) (reg, out, lock string, res verdict.Result) {
		reg, out = tempDir(t), tempDir(t)
		rec := testutil.RecA(testutil.Gone(t), host.Name)
		testutil.Mkdir(t, filepath.Join(reg, "sub"))
		testutil.Mkdir(t, filepath.Join(out, "sub"))
		lock = mkGenA(t, filepath.Join(reg, "sub"), "x.lock", rec)
		mkGenA(t, filepath.Join(out, "sub"), "x.lock", rec)
		return reg, out, lock, judge(t, reg, lock, verdict.Gone)
	}
	t.Run("registry directory swapped for a link to a copy outside", func(t *testing.T) {
		reg, out, lock, res := setup(t)
		outside := testutil.Snapshot(t, out)
		moved := testutil.Snapshot(t, filepath.Join(reg, "sub"))
		f := fix.New(judges.Sweep(host))
		f.Hook = at(t, fix.BeforeOpen, func(*scan.Lock) {
			swap(t, filepath.Join(reg, "sub"), filepath.Join(reg, "sub.moved"), filepath.Join(out, "sub"))
		})

		o := f.Fix(res)

		wantOutcome(t, lock, o, fix.Kept, "cannot open the registry directory")
		testutil.SameTree(t, out, outside)
		testutil.SameTree(t, filepath.Join(reg, "sub.moved"), moved)
	})
	t.Run("registry directory moved outside, a link left to it", func(t *testing.T) {
		reg, _, lock, res := setup(t)
		away := filepath.Join(tempDir(t), "sub")
		moved := testutil.Snapshot(t, filepath.Join(reg, "sub"))
		f := fix.New(judges.Sweep(host))
		f.Hook = at(t, fix.BeforeOpen, func(*scan.Lock) {
			swap(t, filepath.Join(reg, "sub"), away, away)
		})

		o := f.Fix(res)

		wantOutcome(t, lock, o, fix.Kept, "cannot open the registry directory")
		testutil.SameTree(t, away, moved)
	})
	t.Run("holder swapped for a link to one outside", func(t *testing.T) {
		reg, out, lock, res := setup(t)
		outside := testutil.Snapshot(t, out)
		target := filepath.Join(out, "sub", "x.lock.holder")
		f := fix.New(judges.Sweep(host))
		f.Hook = at(t, fix.BeforeClaim, func(*scan.Lock) {
			if err := os.Remove(lock + ".holder"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, lock+".holder"); err != nil {
				t.Fatal(err)
			}
		})

		o := f.Fix(res)

		wantOutcome(t, lock, o, fix.Kept, "the record was put back")
		testutil.SameTree(t, out, outside)
		if got, err := os.Readlink(lock + ".holder"); err != nil || got != target {
			t.Errorf("%s.holder = link to %q (%v), want the link to %s back in place", lock, got, err, target)
		}
		if !exists(lock) {
			t.Errorf("%s was removed", lock)
		}
		noDebris(t, reg)
	})
	t.Run("registry-b lock directory swapped for a link outside", func(t *testing.T) {
		reg, out := tempDir(t), tempDir(t)
		pid := testutil.Gone(t)
		tok := testutil.TokenB(pid, 6)
		rec := testutil.RecB(tok, pid, host.Name, host.Scope)
		testutil.Mkdir(t, filepath.Join(reg, "sub"))
		testutil.Mkdir(t, filepath.Join(out, "sub"))
		lock := mkGenB(t, filepath.Join(reg, "sub"), "x.lock", tok, rec)
		mkGenB(t, filepath.Join(out, "sub"), "x.lock", tok, rec)
		res := judge(t, reg, lock, verdict.Gone)
		outside := testutil.Snapshot(t, out)
		f := fix.New(judges.Sweep(host))
		f.Hook = at(t, fix.BeforeOpen, func(*scan.Lock) {
			swap(t, lock, lock+".moved", filepath.Join(out, "sub", "x.lock"))
		})

		o := f.Fix(res)

		wantOutcome(t, lock, o, fix.Skipped, "replaced since it was judged")
		testutil.SameTree(t, out, outside)
	})
}

// swap renames path to moveTo and puts a symbolic link to target in its place.
func swap(t *testing.T, path, moveTo, target string) {
	t.Helper()
	if err := os.Rename(path, moveTo); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// TestGenBExtrasKept guards the gate in front of step 1 for generation B: a
// gone lock whose directory holds anything besides its one record, or whose
// holder asked never to be broken, is kept, and not one file changes.
func TestGenBExtrasKept(t *testing.T) {
	host := testHost(t)
	tests := []struct {
		name   string
		more   []string // record lines after scope
		extra  func(t *testing.T, lock, tok string)
		reason string
	}{
		{"a writer's evidence", nil, func(t *testing.T, lock, tok string) {
			testutil.WriteFile(t, filepath.Join(lock, fmt.Sprintf("writer.%s.%d", tok, testutil.Gone(t))), nil)
		}, "entries besides its holder record"},
		{"an unknown file", nil, func(t *testing.T, lock, _ string) {
			testutil.WriteFile(t, filepath.Join(lock, "notes"), []byte("hello\n"))
		}, "entries besides its holder record"},
		{"break no", []string{"break no"}, func(*testing.T, string, string) {}, "break no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempDir(t)
			pid := testutil.Gone(t)
			tok := testutil.TokenB(pid, 8)
			lock := mkGenB(t, dir, "x.lock", tok, testutil.RecB(tok, pid, host.Name, host.Scope, tt.more...))
			tt.extra(t, lock, tok)
			res := judge(t, dir, lock, verdict.Gone)
			before := testutil.Snapshot(t, dir)

			o := fix.New(judges.Sweep(host)).Fix(res)

			wantOutcome(t, lock, o, fix.Kept, tt.reason)
			testutil.SameTree(t, dir, before)
		})
	}
}

// TestSweepNameTooLongToClaim: a gone lock whose name leaves no room below
// the file system's name limit for the claim (another tool's, named near
// NAME_MAX) is kept, saying why and what to do, and nothing is touched.
func TestSweepNameTooLongToClaim(t *testing.T) {
	host := testHost(t)
	dir := tempDir(t)
	lock := mkFile(t, dir, strings.Repeat("n", 230)+".lock", fileRec(testutil.Gone(t)))
	res := judge(t, dir, lock, verdict.Gone)
	if res.Lock.FS.NameMax != 255 {
		t.Skipf("the name limit here is %d, not 255", res.Lock.FS.NameMax)
	}
	o := fix.New(judges.Sweep(host)).Fix(res)
	wantOutcome(t, lock, o, fix.Kept, "would be longer than this file system takes (255): it cannot be removed safely by lockctl; remove it by hand")
	if left := names(t, dir); len(left) != 1 {
		t.Errorf("after Fix(%s) the registry holds %q, want the lock alone", lock, left)
	}
}

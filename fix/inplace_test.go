//go:build linux

package fix_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// A record rewritten in place keeps its inode: a live process taking a
// stale lock with open(O_WRONLY|O_TRUNC) and its own pid, as shell and cron
// code does, or a writer that opened the record before the claim (issue
// 41, items 2 and 5). These tests guard the two reads that bind a claim to
// the bytes judged: before the rename, and from the claim's name right
// before the removal.

// rewriteInPlace writes rec over the file at path, keeping its inode, and,
// with keepMtime, sets its mtime back to what it was, as a program can: then
// only its ctime says it was written.
func rewriteInPlace(t *testing.T, path string, rec []byte, keepMtime bool) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(rec); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if keepMtime {
		if err := os.Chtimes(path, time.Time{}, st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
}

// never returns a Hook that fails the test if the Fixer reaches step.
func never(t *testing.T, step fix.Step, then func(fix.Step, *scan.Lock)) func(fix.Step, *scan.Lock) {
	return func(s fix.Step, l *scan.Lock) {
		if s == step {
			t.Errorf("the Fixer reached step %q: it claimed a record that was rewritten since it was judged", step)
		}
		then(s, l)
	}
}

// TestInPlaceRewriteBeforeClaim: the record is rewritten in place between
// the judgement and the claim, naming a live process (with the same size
// and its mtime set back, only its bytes and ctime differ). It is never claimed:
// the name keeps the live record, untouched.
func TestInPlaceRewriteBeforeClaim(t *testing.T) {
	host := testHost(t)
	live := testutil.Sleeper(t).Process.Pid
	for _, tt := range []struct {
		name      string
		make      maker
		keepMtime bool
	}{
		{"filelock", makeFile, false},
		{"filelock, same size, mtime set back", makeFile, true},
		{"registry-a", makeA, false},
		{"registry-a, mtime set back", makeA, true},
		{"registry-b", makeB, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempDir(t)
			gone := testutil.Gone(t)
			lock, record, old := tt.make(t, host, dir, gone)
			res := judge(t, dir, lock, verdict.Gone)
			rec := old
			if tt.keepMtime {
				// The same size: the gone pid's digits become others.
				rec = []byte(string(old))
				for i, c := range rec {
					if c >= '0' && c <= '9' {
						rec[i] = '0' + (c-'0'+1)%10
					}
				}
			} else {
				_, _, rec = tt.make(t, host, t.TempDir(), live)
			}
			ino := inode(t, record)
			f := fix.New(judges.Sweep(host))
			f.Hook = never(t, fix.BeforeVerify, at(t, fix.BeforeCheck, func(*scan.Lock) { rewriteInPlace(t, record, rec, tt.keepMtime) }))

			o := f.Fix(res)

			if o.Action == fix.Removed {
				t.Fatalf("Fix(%s) removed a lock whose record was rewritten: %s", lock, o.Reason)
			}
			wantFile(t, record, rec, ino)
			noDebris(t, dir)
		})
	}
}

// TestWriteThroughAnOpenFdAfterClaim: a writer that opened the record
// before the claim writes a live pid through that descriptor after the
// second judgement. The claimed record, read again right before the
// removal, is not what was judged: it goes back, and the lock stays.
func TestWriteThroughAnOpenFdAfterClaim(t *testing.T) {
	host := testHost(t)
	live := testutil.Sleeper(t).Process.Pid
	for _, tt := range []struct {
		name string
		make maker
	}{{"filelock", makeFile}, {"registry-a", makeA}, {"registry-b", makeB}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempDir(t)
			lock, record, _ := tt.make(t, host, dir, testutil.Gone(t))
			res := judge(t, dir, lock, verdict.Gone)
			_, _, rec := tt.make(t, host, t.TempDir(), live)
			ino := inode(t, record)
			var w *os.File
			t.Cleanup(func() {
				if w != nil {
					w.Close()
				}
			})
			open := at(t, fix.BeforeClaim, func(*scan.Lock) {
				var err error
				if w, err = os.OpenFile(record, os.O_WRONLY, 0); err != nil {
					t.Fatal(err)
				}
			})
			write := at(t, fix.BeforeRemove, func(*scan.Lock) {
				if err := w.Truncate(0); err != nil {
					t.Fatal(err)
				}
				if _, err := w.WriteAt(rec, 0); err != nil {
					t.Fatal(err)
				}
			})
			f := fix.New(judges.Sweep(host))
			f.Hook = func(s fix.Step, l *scan.Lock) { open(s, l); write(s, l) }

			o := f.Fix(res)

			wantOutcome(t, lock, o, fix.Kept, "the record was put back")
			wantFile(t, record, rec, ino)
			noDebris(t, dir)
		})
	}
}

// TestBarePidFilesAreNeverClaimed: a bare pid file of unknown producer
// (plain, UUCP, pid= lines) may be taken by a live process rewriting it in
// place, which no claim can be bound to: its gone verdict proposes no
// removal, and --fix skips it without touching a byte (scan.InPlace).
func TestBarePidFilesAreNeverClaimed(t *testing.T) {
	host := testHost(t)
	for _, tt := range []struct {
		name string
		make maker
	}{
		{"pid", makePid},
		{"uucp", makeUUCP},
		{"pid-kv", func(t *testing.T, _ verdict.Host, dir string, pid int) (string, string, []byte) {
			rec := fmt.Appendf(nil, "pid=%d\n", pid)
			lock := mkFile(t, dir, "x.lock", rec)
			return lock, lock, rec
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempDir(t)
			lock, _, _ := tt.make(t, host, dir, testutil.Gone(t))
			res := judge(t, dir, lock, verdict.Gone)
			if len(res.Remove) > 0 {
				t.Errorf("Judge(%s).Remove = %v, want none: its producers may rewrite it in place", lock, res.Remove)
			}
			before := testutil.Snapshot(t, dir)
			f := fix.New(judges.Sweep(host))
			f.Hook = never(t, fix.BeforeClaim, func(fix.Step, *scan.Lock) {})

			o := f.Fix(res)

			wantOutcome(t, lock, o, fix.Skipped, "rewriting their own pid file")
			testutil.SameTree(t, dir, before)
		})
	}
}

//go:build linux

package fix_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/verdict"
)

// Producers' temporaries (scan.Temp): after a gone lock is swept, or with
// no lock at all, --fix removes one only when it is this host's, its pid
// is provably gone, and it is still the file read; every other is kept
// byte for byte.

func gnupgRec(pid int, node string) []byte { return fmt.Appendf(nil, "%10d\n%s\n", pid, node) }
func shadowRec(pid int) []byte             { return fmt.Appendf(nil, "%d\x00", pid) }

func tempHost(t *testing.T) verdict.Host {
	t.Helper()
	h := localHost()
	if h.Name == "" {
		t.Skip("the host name cannot be read")
	}
	return h
}

// TestGoneLockTakesItsTemps: gpg killed holding pubring.kbx.lock leaves
// its .#lk twin (one inode): --fix removes both.
func TestGoneLockTakesItsTemps(t *testing.T) {
	host := tempHost(t)
	dir := tempDir(t)
	dead := testutil.Gone(t)
	lock := mkFile(t, dir, "pubring.kbx.lock", gnupgRec(dead, host.Name))
	twin := filepath.Join(dir, fmt.Sprintf(".#lk0x55d1c2a3b4c0.%s.%d", host.Name, dead))
	if err := os.Link(lock, twin); err != nil {
		t.Fatal(err)
	}
	res := judge(t, dir, lock, verdict.Gone)
	if len(res.Temps) != 1 || !res.Temps[0].Inert() {
		t.Fatalf("Judge(%s).Temps = %+v, want its twin, gone", lock, res.Temps)
	}
	o := fix.New(judges.Sweep(host)).Fix(res)
	wantOutcome(t, lock, o, fix.Removed, "removed 1 temporary file")
	if left := names(t, dir); len(left) > 0 {
		t.Errorf("left %q, want nothing", left)
	}
}

// TestTempsKept: a temporary of a running pid (a producer taking the
// lock), of another host, of a pid out of range, and one rewritten or
// replaced since it was read are all kept, byte for byte; a lock's
// verdict is never changed by its temporaries.
func TestTempsKept(t *testing.T) {
	host := tempHost(t)
	dir := tempDir(t)
	dead := testutil.Gone(t)
	live := testutil.Sleeper(t).Process.Pid
	lock := mkFile(t, dir, "passwd.lock", shadowRec(dead))
	running := mkFile(t, dir, fmt.Sprintf("passwd.%d", live), shadowRec(live))
	far := mkFile(t, dir, fmt.Sprintf(".#lk0x5581.not-%s.%d", host.Name, dead), gnupgRec(dead, "not-"+host.Name))
	huge := mkFile(t, dir, "group.2147483647", shadowRec(2147483647))
	res := judge(t, dir, lock, verdict.Gone)
	if len(res.Temps) != 1 || res.Temps[0].State != verdict.StateRunning {
		t.Fatalf("Judge(%s).Temps = %+v, want %s running", lock, res.Temps, running)
	}
	all := judgeAll(t, dir)
	o := fix.New(judges.Sweep(host)).Fix(res)
	wantOutcome(t, lock, o, fix.Removed, "kept 1 temporary file")
	for _, p := range []string{far, filepath.Join(dir, "group.lock")} {
		r, ok := all[p]
		if !ok {
			t.Fatalf("%s not found: %v", p, all)
		}
		if r.Verdict != verdict.Free || len(r.Temps) != 1 || r.Temps[0].Inert() {
			t.Errorf("Judge(%s) = %s, temps %+v; want free, its temporary in doubt", p, r.Verdict, r.Temps)
		}
		wantOutcome(t, p, fix.New(judges.Sweep(host)).Fix(r), fix.Kept, "kept 1 temporary file")
	}
	wantFile(t, running, shadowRec(live), 0)
	wantFile(t, far, gnupgRec(dead, "not-"+host.Name), 0)
	wantFile(t, huge, shadowRec(2147483647), 0)
}

// TestTempChangedSinceRead: a temporary whose pid is gone is removed only
// while it is the file read: rewritten in place (shadow opens its
// temporary with O_TRUNC: its mtime moves) or replaced, it is kept.
func TestTempChangedSinceRead(t *testing.T) {
	host := tempHost(t)
	for _, tc := range []struct {
		name   string
		change func(path string, rec []byte) uint64
	}{
		{"rewritten in place", func(path string, rec []byte) uint64 {
			testutil.WriteFile(t, path, rec)
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(path, later, later); err != nil {
				t.Fatal(err)
			}
			return inode(t, path)
		}},
		{"replaced", func(path string, rec []byte) uint64 { return replaceFile(t, path, rec) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tempDir(t)
			dead := testutil.Gone(t)
			tmp := mkFile(t, dir, fmt.Sprintf("shadow.%d", dead), shadowRec(dead))
			res := judge(t, dir, filepath.Join(dir, "shadow.lock"), verdict.Free)
			if len(res.Temps) != 1 || !res.Temps[0].Inert() {
				t.Fatalf("Judge.Temps = %+v, want one, gone", res.Temps)
			}
			ino := tc.change(tmp, shadowRec(dead))
			o := fix.New(judges.Sweep(host)).Fix(res)
			wantOutcome(t, tmp, o, fix.Kept, "kept 1 temporary file")
			wantFile(t, tmp, shadowRec(dead), ino)
		})
	}
}

// TestTempJudgedAgain: a temporary judged gone whose pid runs by the time
// --fix comes (asked again) is kept.
func TestTempJudgedAgain(t *testing.T) {
	host := tempHost(t)
	dir := tempDir(t)
	dead := testutil.Gone(t)
	tmp := mkFile(t, dir, ".tX7-lock", fmt.Appendf(nil, "%10d\n", dead))
	res := judge(t, dir, filepath.Join(dir, ".X7-lock"), verdict.Free)
	f := fix.New(&verdict.Judge{Host: host, Probe: runningProbe{}})
	wantOutcome(t, tmp, f.Fix(res), fix.Kept, "kept 1 temporary file")
	wantFile(t, tmp, fmt.Appendf(nil, "%10d\n", dead), 0)
	wantOutcome(t, tmp, fix.New(judges.Sweep(host)).Fix(res), fix.Removed, "removed 1 temporary file")
	if exists(tmp) {
		t.Errorf("%s left", tmp)
	}
}

//go:build linux

package e2e

// The first done-when of issue 3 (doctor --fix), end to end through the
// real CLI: a mixed registry of 190 gone locks in the three formats
// (zombies included), two abandoned breaks (one of a gone holder, one of a
// live holder) and a crowd of live, owner-less, foreign and recycled locks,
// swept by four concurrent `lockctl doctor --fix --json` processes.
//
// What it guards, by step of the protocol (docs/fix-protocol.md):
//   - 1. claim: of four racing sweepers exactly one removes each gone lock
//     and finishes each abandoned break; the others say "skipped";
//   - 4. remove, then the claim: no <lock>.dead.* debris is left;
//   - abandoned breaks: the claim of a live holder's record is put back,
//     byte for byte and inode for inode, exactly once;
//   - eligibility: every lock that is not gone is untouched, byte for byte
//     and inode for inode.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/kernel"
)

const (
	feGoneLocks = 190
	feSweepers  = 4
)

func feInode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// feLock is the part of doctor's JSON document this test reads.
type feLock struct {
	Path         string `json:"path"`
	Verdict      string `json:"verdict"`
	Reason       string `json:"reason"`
	Action       string `json:"action"`
	ActionReason string `json:"action_reason"`
	Conflict     string `json:"conflict"`
}

type feDoc struct {
	Locks   []feLock       `json:"locks"`
	Actions map[string]int `json:"actions"`
	Errors  []string       `json:"errors"`
}

// feRun is one finished lockctl process.
type feRun struct {
	code           int
	stdout, stderr string
	doc            feDoc
}

func feDecode(t *testing.T, what string, stdout []byte) feDoc {
	t.Helper()
	var doc feDoc
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Fatalf("%s: not one JSON document: %v\n%s", what, err, stdout)
	}
	return doc
}

func feExit(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// feConcurrent runs n copies of `lockctl args...` at once. Each is started
// as a shell that says "ready" and then blocks reading its stdin; once all
// n have said so, all their stdins are closed together and each shell execs
// lockctl (same pid, lockctl's exit status). So the n sweeps start within
// microseconds of each other, with no sleep.
func feConcurrent(t *testing.T, bin string, n int, args ...string) []feRun {
	t.Helper()
	script := `echo ready; read -r _; exec "$0" "$@"`
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = exec.Command("/bin/sh", append([]string{"-c", script, bin}, args...)...)
		cmds[i].Env = lcEnv(nil)
	}
	gs := testutil.StartTogether(t, cmds...)
	testutil.Release(t, 60*time.Second, gs)
	runs := make([]feRun, n)
	for i, g := range gs {
		if g.Err != nil {
			t.Fatalf("sweeper %d: reading stdout: %v", i, g.Err)
		}
		runs[i] = feRun{code: feExit(g.Cmd.Wait()), stdout: string(g.Out), stderr: g.Stderr.String()}
	}
	return runs
}

// feOtherScope is a generation B scope digest of some other machine.
func feOtherScope(mine string) string {
	sum := sha256.Sum256([]byte("agmsg-lock-scope:0123456789abcdef0123456789abcdef:another-boot:pid:[4026531836]"))
	s := hex.EncodeToString(sum[:])
	if s == mine {
		panic("the other machine's scope is this one's")
	}
	return s
}

// TestFixMixedRegistry is the first done-when of issue 3: after four
// concurrent doctor --fix --json runs over a mixed registry, every gone lock
// is removed exactly once across the runs with no claim debris left, the
// live holder's record of an abandoned break is back in place, and every
// other lock is byte-for-byte and inode-for-inode unchanged.
func TestFixMixedRegistry(t *testing.T) {
	bin := lcBinary(t)
	host := kernel.LocalHost()
	if host.Name == "" {
		t.Skip("the host name cannot be read")
	}
	if host.Scope == "" {
		t.Skipf("no generation B scope on this host: %v", host.ScopeErr)
	}
	begin := time.Now()
	reg, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	// Holders. Gone: zombies (exited, unreaped until cleanup) and processes
	// started and reaped. Live: sleeps, killed and reaped at cleanup.
	var gone []int
	zombie := map[int]bool{}
	for range 4 {
		z := testutil.Zombie(t).Process.Pid
		zombie[z] = true
		gone = append(gone, z, testutil.Gone(t))
	}
	live := []int{testutil.Sleeper(t).Process.Pid, testutil.Sleeper(t).Process.Pid}

	// want says what each lock is, by path.
	const (
		kGone          = "gone"
		kAbandonedGone = "abandoned break of a gone holder"
		kAbandonedLive = "abandoned break of a live holder"
		kBareGone      = "gone bare pid file"
	)
	want := map[string]string{}   // path → kGone, kAbandoned*, or the crowd verdict
	vanishing := 0                // entries made that the sweep must remove
	ofZombie := map[string]bool{} // the gone locks whose holder is a zombie
	teams := []string{"team0", "team1", "team2", "team3", "team4/deep/er"}
	for _, d := range teams {
		testutil.Mkdir(t, filepath.Join(reg, d))
	}
	at := func(i int, name string) string { return filepath.Join(reg, teams[i%len(teams)], name) }

	// 190 gone locks, a third in each format, sharing the eight gone pids
	// (8 and 3 are coprime: every format gets zombies and reaped pids).
	for i := range feGoneLocks {
		pid := gone[i%len(gone)]
		var lock string
		switch i % 3 {
		case 0: // generation A: the directory, then its sibling holder
			lock = at(i, fmt.Sprintf("a%03d.lock", i))
			testutil.Mkdir(t, lock)
			testutil.WriteFile(t, lock+".holder", testutil.RecA(pid, host.Name))
			vanishing += 2
		case 1: // generation B: holder.<token> inside, this host's scope
			lock = at(i, fmt.Sprintf("b%03d.lock", i))
			testutil.Mkdir(t, lock)
			tok := testutil.TokenB(pid, i)
			testutil.WriteFile(t, filepath.Join(lock, "holder."+tok), testutil.RecB(tok, pid, host.Name, host.Scope))
			vanishing += 2
		default: // a lock file (a bare pid file is never claimed: kBareGone)
			lock = at(i, fmt.Sprintf("p%03d.lock", i))
			testutil.WriteFile(t, lock, testutil.FileRec(pid))
			vanishing++
		}
		want[lock] = kGone
		ofZombie[lock] = zombie[pid]
	}

	// Two abandoned breaks: a generation A directory without its holder and
	// a claim, made after the directory, named after a gone breaker.
	breaker := testutil.Gone(t)
	abGone := at(0, "abandoned-gone.lock")
	testutil.Mkdir(t, abGone)
	abGoneClaim := fmt.Sprintf("%s.dead.%d.1", abGone, breaker)
	testutil.WriteFile(t, abGoneClaim, testutil.RecA(gone[1], host.Name))
	want[abGone] = kAbandonedGone
	vanishing += 2

	abLive := at(1, "abandoned-live.lock")
	testutil.Mkdir(t, abLive)
	abLiveClaim := fmt.Sprintf("%s.dead.%d.2", abLive, breaker)
	abLiveRec := testutil.RecA(live[0], host.Name)
	testutil.WriteFile(t, abLiveClaim, abLiveRec)
	abLiveIno := feInode(t, abLiveClaim)
	want[abLive] = kAbandonedLive
	vanishing++ // the claim; its record comes back as <lock>.holder

	// The crowd, none of it gone.
	for i, pid := range live {
		l := at(i, fmt.Sprintf("live-a%d.lock", i))
		testutil.Mkdir(t, l)
		testutil.WriteFile(t, l+".holder", testutil.RecA(pid, host.Name))
		want[l] = "live"
		l = at(i+1, fmt.Sprintf("live-b%d.lock", i))
		testutil.Mkdir(t, l)
		tok := testutil.TokenB(pid, 1000+i)
		testutil.WriteFile(t, filepath.Join(l, "holder."+tok), testutil.RecB(tok, pid, host.Name, host.Scope))
		want[l] = "live"
		l = at(i+2, fmt.Sprintf("live-p%d.lock", i))
		testutil.WriteFile(t, l, testutil.PidRec(pid))
		want[l] = "live"
	}
	// Bare pid files of gone holders: gone, and never claimed, since
	// their producers may rewrite them in place (scan.InPlace).
	for i := range 3 {
		l := at(i, fmt.Sprintf("bare%d.lock", i))
		testutil.WriteFile(t, l, testutil.PidRec(gone[i%len(gone)]))
		want[l] = kBareGone
	}
	l := at(2, "ownerless-dir.lock")
	testutil.Mkdir(t, l)
	want[l] = "ownerless"
	l = at(3, "ownerless-empty.lock")
	testutil.WriteFile(t, l, nil)
	want[l] = "ownerless"
	l = at(4, "ownerless-zero.lock")
	testutil.WriteFile(t, l, []byte("0"))
	want[l] = "ownerless"
	// Foreign, naming gone pids: here they prove nothing.
	l = at(0, "foreign-a.lock")
	testutil.Mkdir(t, l)
	testutil.WriteFile(t, l+".holder", testutil.RecA(gone[2], "elsewhere"))
	want[l] = "foreign"
	l = at(1, "foreign-b.lock")
	testutil.Mkdir(t, l)
	tok := testutil.TokenB(gone[3], 2000)
	testutil.WriteFile(t, filepath.Join(l, "holder."+tok), testutil.RecB(tok, gone[3], host.Name, feOtherScope(host.Scope)))
	want[l] = "foreign"
	// Recycled: a pid file naming a live sleep, written an hour before it
	// started.
	written := time.Now().Add(-time.Hour)
	l = at(2, "recycled.lock")
	testutil.WriteFile(t, l, testutil.PidRec(testutil.Sleeper(t).Process.Pid))
	if err := os.Chtimes(l, written, written); err != nil {
		t.Fatal(err)
	}
	want[l] = "recycled"

	before := testutil.Snapshot(t, reg)

	// The fixture must be what it claims to be: doctor without --fix
	// judges every lock as intended (and changes nothing; checked below).
	pre := exec.Command(bin, "doctor", "--json", reg)
	pre.Env = lcEnv(nil)
	var preErr bytes.Buffer
	pre.Stderr = &preErr
	out, err := pre.Output()
	if code := feExit(err); code != 1 {
		t.Fatalf("fixture: lockctl doctor --json exited %d, want 1; stderr:\n%s", code, preErr.String())
	}
	judged := map[string]bool{}
	for _, jl := range feDecode(t, "lockctl doctor --json", out).Locks {
		judged[jl.Path] = true
		w, ok := want[jl.Path]
		switch {
		case !ok:
			t.Errorf("fixture: doctor found %s (%s), which this test did not make", jl.Path, jl.Verdict)
		case ofZombie[jl.Path] && !strings.Contains(jl.Reason, "zombie"):
			t.Errorf("fixture: %s is %s (%s), want gone for a zombie", jl.Path, jl.Verdict, jl.Reason)
		default:
			v := w // the crowd: its verdict
			switch w {
			case kAbandonedGone, kAbandonedLive:
				v = "claimed"
			case kBareGone:
				v = "gone"
			}
			if jl.Verdict != v {
				t.Errorf("fixture: %s is %s (%s), want %s (%s)", jl.Path, jl.Verdict, jl.Reason, v, w)
			}
		}
	}
	for p := range want {
		if !judged[p] {
			t.Errorf("fixture: doctor did not report %s", p)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	setup := time.Since(begin)

	sweepBegin := time.Now()
	runs := feConcurrent(t, bin, feSweepers, "doctor", "--fix", "--json", reg)
	sweep := time.Since(sweepBegin)

	// Tally the actions across the runs.
	tally := map[string]map[string]int{} // path → action → runs
	for i := range runs {
		r := &runs[i]
		if r.code != 1 {
			// 1: the owner-less and recycled locks still need attention.
			// Never 2 (an error), never a crash.
			t.Errorf("sweeper %d exited %d, want 1; stderr:\n%s", i, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "conflict") {
			t.Errorf("sweeper %d reports a conflict on stderr:\n%s", i, r.stderr)
		}
		r.doc = feDecode(t, fmt.Sprintf("sweeper %d", i), []byte(r.stdout))
		if len(r.doc.Errors) > 0 {
			t.Errorf("sweeper %d reports errors: %q", i, r.doc.Errors)
		}
		for _, jl := range r.doc.Locks {
			if jl.Conflict != "" {
				t.Errorf("sweeper %d: %s: conflict at %s (%s)", i, jl.Path, jl.Conflict, jl.ActionReason)
			}
			if tally[jl.Path] == nil {
				tally[jl.Path] = map[string]int{}
			}
			tally[jl.Path][jl.Action]++
			w, ok := want[jl.Path]
			var okActions []string
			switch {
			case !ok:
				t.Errorf("sweeper %d reports %s (%s, %s: %s), a lock this test did not make", i, jl.Path, jl.Verdict, jl.Action, jl.ActionReason)
				continue
			case w == kGone || w == kAbandonedGone:
				okActions = []string{"removed", "skipped"}
			case w == kAbandonedLive:
				okActions = []string{"restored", "skipped"}
			default:
				okActions = []string{"skipped"}
			}
			if !feIn(jl.Action, okActions) {
				t.Errorf("sweeper %d: %s (%s: %s) was %q (%s), want one of %q", i, jl.Path, jl.Verdict, jl.Reason, jl.Action, jl.ActionReason, okActions)
			}
		}
	}
	removed := 0
	for p, w := range want {
		var once string
		switch w {
		case kGone, kAbandonedGone:
			once = "removed"
		case kAbandonedLive:
			once = "restored"
		default:
			continue
		}
		if n := tally[p][once]; n != 1 {
			t.Errorf("%s (%s): %s by %d of the %d runs, want exactly one (actions: %v)", p, w, once, n, feSweepers, tally[p])
		}
		if w == kGone {
			removed += tally[p][once]
		}
	}
	for i, r := range runs {
		t.Logf("sweeper %d: exit %d, %d locks reported, actions %v", i, r.code, len(r.doc.Locks), r.doc.Actions)
	}

	// On disk: the gone locks and abandoned break (1) are gone, with their
	// records and claims; abandoned break (2)'s record is back at
	// <lock>.holder, the very inode and bytes claimed; everything else is
	// exactly as it was, and nothing new (no claim debris) appeared.
	expect := map[string]testutil.Entry{}
	vanish := map[string]bool{}
	for p, e := range before {
		abs := filepath.Join(reg, p)
		owner := abs
		switch {
		case strings.HasSuffix(abs, ".holder"):
			owner = strings.TrimSuffix(abs, ".holder")
		case strings.HasPrefix(filepath.Base(abs), "holder."):
			owner = filepath.Dir(abs)
		case abs == abGoneClaim || abs == abLiveClaim:
			vanish[p] = true
			continue
		}
		if w := want[owner]; w == kGone || w == kAbandonedGone {
			vanish[p] = true
			continue
		}
		expect[p] = e
	}
	rel := func(abs string) string { r, _ := filepath.Rel(reg, abs); return r }
	expect[rel(abLive+".holder")] = testutil.Entry{Ino: abLiveIno, Mode: before[rel(abLiveClaim)].Mode, Data: string(abLiveRec)}
	if len(vanish) != vanishing {
		t.Fatalf("test bug: %d entries expected to vanish, but %d were made to", len(vanish), vanishing)
	}
	after := testutil.Snapshot(t, reg)
	var diffs []string
	for p := range after {
		if _, ok := expect[p]; ok {
			continue
		}
		what := "appeared"
		if vanish[p] {
			what = "is still there"
		}
		if strings.Contains(filepath.Base(p), ".dead.") {
			what += " (claim debris)"
		}
		diffs = append(diffs, fmt.Sprintf("%s %s", p, what))
		delete(after, p) // reported here, with what it is; Diff would say only "appeared"
	}
	diffs = append(diffs, testutil.Diff(expect, after)...)
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Errorf("%s: %s", reg, d)
	}
	if t.Failed() {
		for i, r := range runs {
			t.Logf("sweeper %d stderr:\n%s", i, r.stderr)
		}
	}
	t.Logf("%d removals of the %d gone locks across the runs; setup %s (fixture check included), four concurrent sweeps %s",
		removed, feGoneLocks, setup.Round(time.Millisecond), sweep.Round(time.Millisecond))
}

func feIn(s string, set []string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

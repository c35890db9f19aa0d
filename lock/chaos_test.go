//go:build linux

package lock

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/verdict"
)

// envInt reads a positive integer knob of the chaos test from the
// environment.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q is not a positive integer", name, s)
	}
	return n
}

// chaosWorker loops acquire → critical section → release on one lock until
// the stop file appears. Inside the critical section, and only there, it
// appends "enter <pid> <n>" and "exit <pid> <n>" to the log, each with one
// O_APPEND write. Anything unexpected goes to the log as "error <pid> ...".
func chaosWorker() {
	log, err := os.OpenFile(os.Getenv(logEnv), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	pid := os.Getpid()
	say := func(format string, args ...any) {
		if _, err := log.Write([]byte(fmt.Sprintf(format, args...) + "\n")); err != nil {
			os.Exit(2)
		}
	}
	fail := func(what string, err error) {
		say("error %d %s: %s", pid, what, strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(3)
	}
	stop := os.Getenv(stopEnv)
	path := os.Getenv(pathEnv)
	for n := 0; ; n++ {
		if exists(stop) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		l, err := Acquire(ctx, path, Options{Kernel: kern})
		cancel()
		if err != nil {
			fail("acquire", err)
		}
		say("enter %d %d", pid, n)
		// The critical section: long enough for kills to land inside it.
		time.Sleep(time.Duration(rand.N(500)) * time.Microsecond)
		say("exit %d %d", pid, n)
		if err := l.Release(); err != nil {
			fail("release", err)
		}
	}
}

// chaosStats is what a chaos log says happened.
type chaosStats struct {
	enters, kills, killsInside int
	violations                 []string
	errors                     []string
}

// checkChaosLog checks the invariant of a chaos log: no two processes are
// ever inside the critical section at once. The parent writes "kill <pid>"
// before it sends SIGKILL and "dead <pid>" once Wait has reaped it. A holder
// is gone (and its lock breakable) as soon as it is a zombie, which is
// before Wait returns, so a successor may legitimately enter between
// "kill X" and "dead X": the rule is that at any "enter Y" the previous
// holder X has written "exit X", or its kill had already been sent.
func checkChaosLog(data []byte) chaosStats {
	var st chaosStats
	inside := 0 // the pid inside the critical section, 0 for none
	killing := map[int]bool{}
	violate := func(n int, format string, args ...any) {
		if len(st.violations) < 10 {
			st.violations = append(st.violations, fmt.Sprintf("log line %d: ", n)+fmt.Sprintf(format, args...))
		}
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		n := i + 1
		if line == "" && len(data) == 0 {
			break
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			violate(n, "malformed line %q", line)
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			violate(n, "malformed line %q", line)
			continue
		}
		switch f[0] {
		case "enter":
			st.enters++
			switch {
			case inside == pid:
				violate(n, "pid %d entered again without leaving", pid)
			case inside != 0 && !killing[inside]:
				violate(n, "pid %d entered while pid %d, alive and not being killed, was inside", pid, inside)
			}
			inside = pid
		case "exit":
			if inside != pid {
				violate(n, "pid %d left, but pid %d had entered since", pid, inside)
			}
			inside = 0
		case "kill":
			st.kills++
			killing[pid] = true
			if inside == pid {
				st.killsInside++
			}
		case "dead":
		case "error":
			st.errors = append(st.errors, line)
		default:
			violate(n, "malformed line %q", line)
		}
	}
	return st
}

// TestChaosLogChecker feeds the checker logs with and without overlaps.
func TestChaosLogChecker(t *testing.T) {
	tests := []struct {
		name string
		log  string
		ok   bool
	}{
		{"alternating", "enter 1 0\nexit 1 0\nenter 2 0\nexit 2 0\n", true},
		{"killed inside, then another", "enter 1 0\nkill 1\nenter 2 0\ndead 1\nexit 2 0\n", true},
		{"killed inside, reaped, then another", "enter 1 0\nkill 1\ndead 1\nenter 2 0\nexit 2 0\n", true},
		{"overlap", "enter 1 0\nenter 2 0\nexit 2 0\nexit 1 0\n", false},
		{"kill sent only after the overlap", "enter 1 0\nenter 2 0\nkill 1\n", false},
		{"exit after another entered", "enter 1 0\nkill 1\nenter 2 0\nexit 1 0\n", false},
		{"re-entry", "enter 1 0\nenter 1 1\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := checkChaosLog([]byte(tt.log))
			if ok := len(st.violations) == 0; ok != tt.ok {
				t.Errorf("checkChaosLog(%q) violations = %q, want ok %v", tt.log, st.violations, tt.ok)
			}
		})
	}
}

// TestChaosLock: several processes loop acquire → critical section →
// release on one lock while a killer SIGKILLs them at random moments and
// starts new ones. No two may ever be inside at once, nothing may wedge, and
// the lock must end judged and free.
//
// Knobs: LOCKCTL_CHAOS_ACQUISITIONS (default 2000), LOCKCTL_CHAOS_WORKERS
// (4), LOCKCTL_CHAOS_KILL_MS (mean time between kills, 25),
// LOCKCTL_CHAOS_DIR (where the lock lives; default a temporary directory
// on the disk, /dev/shm for tmpfs).
func TestChaosLock(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos test takes tens of seconds")
	}
	target := envInt(t, "LOCKCTL_CHAOS_ACQUISITIONS", 2000)
	nworkers := envInt(t, "LOCKCTL_CHAOS_WORKERS", 4)
	killMean := time.Duration(envInt(t, "LOCKCTL_CHAOS_KILL_MS", 25)) * time.Millisecond
	dir := t.TempDir()
	if d := os.Getenv("LOCKCTL_CHAOS_DIR"); d != "" {
		var err error
		if dir, err = os.MkdirTemp(d, "chaos"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	p := filepath.Join(dir, "c.lock")
	aux := t.TempDir()
	logPath, stop := filepath.Join(aux, "log"), filepath.Join(aux, "stop")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	stderr, err := os.Create(filepath.Join(aux, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()

	type worker struct {
		cmd  *exec.Cmd
		done chan struct{}
	}
	var mu sync.Mutex // guards workers and killed
	workers := make([]*worker, nworkers)
	killed := map[*worker]bool{}
	startWorker := func() *worker {
		c := helper("chaos", pathEnv+"="+p, logEnv+"="+logPath, stopEnv+"="+stop)
		c.Stderr = stderr
		if err := c.Start(); err != nil {
			t.Error(err)
			return nil
		}
		w := &worker{cmd: c, done: make(chan struct{})}
		go func() { _ = c.Wait(); close(w.done) }()
		return w
	}
	for i := range workers {
		if workers[i] = startWorker(); workers[i] == nil {
			t.FailNow()
		}
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range workers {
			if w != nil {
				_ = w.cmd.Process.Kill()
				testutil.Await(t, testutil.KillWait, fmt.Sprintf("worker %d to be reaped after its SIGKILL", w.cmd.Process.Pid), w.done)
			}
		}
	})

	// The killer: at random moments, SIGKILL a random worker, reap it, and
	// start another in its place.
	stopKiller := make(chan struct{})
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		for {
			select {
			case <-stopKiller:
				return
			case <-time.After(time.Duration(rand.N(2 * int64(killMean)))):
			}
			mu.Lock()
			i := rand.N(nworkers)
			w := workers[i]
			select {
			case <-w.done:
				mu.Unlock()
				continue // it ended on its own: the monitor says why
			default:
			}
			pid := w.cmd.Process.Pid
			fmt.Fprintf(log, "kill %d\n", pid)
			_ = w.cmd.Process.Kill()
			if _, ok := testutil.Within(w.done, testutil.KillWait); !ok {
				t.Errorf("worker %d was not reaped within %s of its SIGKILL", pid, testutil.KillWait)
				mu.Unlock()
				return // the monitor stops on the failure
			}
			fmt.Fprintf(log, "dead %d\n", pid)
			killed[w] = true
			if workers[i] = startWorker(); workers[i] == nil {
				workers[i] = w // keep a reaped worker in the slot
			}
			mu.Unlock()
		}
	}()

	// The monitor: until enough acquisitions are logged, watch for errors,
	// for workers that ended without being killed, and for a lock that
	// stopped changing hands.
	begin := time.Now()
	deadline := begin.Add(time.Duration(envInt(t, "LOCKCTL_CHAOS_TIMEOUT_S", 150)) * time.Second)
	stall := time.Duration(envInt(t, "LOCKCTL_CHAOS_STALL_S", 10)) * time.Second
	lastEnters, lastProgress := 0, begin
	wedged := false
	var st chaosStats
	for {
		data, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		st = checkChaosLog(data)
		mu.Lock()
		var ended []int
		for _, w := range workers {
			select {
			case <-w.done:
				if !killed[w] {
					ended = append(ended, w.cmd.Process.Pid)
				}
			default:
			}
		}
		mu.Unlock()
		if st.enters != lastEnters {
			lastEnters, lastProgress = st.enters, time.Now()
		}
		if time.Since(lastProgress) > stall {
			wedged = true
			rs := judgeDir(t, dir)
			for _, r := range rs {
				if r.Lock.Name == "c.lock" && r.Verdict == verdict.Ownerless && len(r.Lock.Claims) > 64 {
					// scan reads at most 64 side files of a lock.
					t.Errorf("the lock wedged: nobody entered for %s; it reads %s (%s) beside %d side files, the debris of acquirers killed while waiting",
						stall, r.Verdict, r.Reason, len(r.Lock.Claims))
					wedged = false // reported, with its cause
				}
			}
			if wedged {
				n := 0
				for _, r := range rs {
					n += len(r.Lock.Claims)
				}
				t.Errorf("the lock wedged: nobody entered for %s (judged, %d side files:%s)\nregistry:%s", stall, n, describe(rs), dump(dir))
			}
			break
		}
		if len(st.errors) > 0 || len(st.violations) > 0 || len(ended) > 0 || st.enters >= target || time.Now().After(deadline) || t.Failed() {
			if len(ended) > 0 {
				t.Errorf("workers %v ended on their own", ended)
			}
			if len(st.errors) > 0 {
				t.Errorf("a worker failed; the registry:%s\njudged:%s", dump(dir), describe(judgeDir(t, dir)))
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stopKiller)
	<-killerDone
	elapsed := time.Since(begin)

	// Let the workers finish: each leaves at its next turn. A worker that
	// cannot get the lock within the wait means the lock wedged.
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	finish := time.Now().Add(30 * time.Second)
	if time.Since(lastProgress) > stall {
		finish = time.Now() // wedged: do not wait for the lock
	}
	mu.Lock()
	for _, w := range workers {
		select {
		case <-w.done:
		case <-time.After(time.Until(finish)):
			if !t.Failed() {
				t.Errorf("a worker did not finish within 30s of being told to stop: the lock wedged (judged:%s)\nregistry:%s", describe(judgeDir(t, dir)), dump(dir))
			}
			_ = w.cmd.Process.Kill()
			if _, ok := testutil.Within(w.done, testutil.KillWait); !ok {
				mu.Unlock()
				t.Fatalf("worker %d was not reaped within %s of its SIGKILL", w.cmd.Process.Pid, testutil.KillWait)
			}
		}
	}
	mu.Unlock()

	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	st = checkChaosLog(data)
	t.Logf("%d acquisitions by %d workers in %s (%.0f/s), %d SIGKILLs, %d of them inside the critical section",
		st.enters, nworkers, elapsed.Round(time.Millisecond), float64(st.enters)/elapsed.Seconds(), st.kills, st.killsInside)
	for _, v := range st.violations {
		t.Errorf("two holders inside at once: %s", v)
	}
	for _, e := range st.errors {
		t.Errorf("a worker failed: %s", e)
	}
	if st.enters < target && !t.Failed() {
		t.Errorf("only %d acquisitions before the deadline, want %d", st.enters, target)
	}
	if st.kills == 0 {
		t.Errorf("no worker was killed: the test tested nothing")
	}
	if b, _ := os.ReadFile(stderr.Name()); len(bytes.TrimSpace(b)) > 0 {
		t.Logf("workers' stderr:\n%s", b)
	}
	if t.Failed() {
		return
	}

	// Every worker is dead now: whatever they left is judged, nothing is
	// owner-less, the next Acquire goes straight through, and a sweep
	// leaves nothing behind.
	rs := judgeDir(t, dir)
	for _, r := range rs {
		switch r.Verdict {
		case verdict.Ownerless, verdict.Unknown, verdict.Live, verdict.Recycled, verdict.Foreign:
			t.Errorf("after the chaos %s is %s (%s)", r.Lock.Name, r.Verdict, r.Reason)
		}
	}
	t.Logf("left behind: %s, judged:%s", brief(testutil.Names(t, dir)), describe(rs))
	l := acquireWithin(t, p, 5*time.Second)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	sweep(t, dir)
	if left := testutil.Names(t, dir); len(left) > 0 {
		t.Errorf("after the chaos and a sweep, the registry still holds %s (judged:%s)", brief(left), describe(judgeDir(t, dir)))
	}
}

//go:build linux

package e2e

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// stressWorker loops `lockctl run` on $L until $STOP exists. Its critical
// section proves itself exclusive with a witness: it takes an flock on $W
// through fd 1 (not fd 0, which sh gives a background child from
// /dev/null), which it and anything it forks hold exactly as long as they
// hold the lock's fd 3, and which the kernel drops at any death (before
// fd 3: an exit closes descriptors in order, so the witness is never held
// after the lock is free). A second process granted the lock while a live
// one is still inside finds the witness held and writes "overlap"
// (flock(1)'s -E status, not its death: a SIGKILLed flock(1) says
// nothing). A third of the sections end in a child that outlives CMD by
// 100 ms holding fd 3 and fd 1 (issue 41, item 1): on the
// release-ignores-holders mutant that gives overlaps within 300 entries.
// The SIGKILLs land on the loops' date(1) too: a date killed reads as no
// time at all, which keeps the loop going (it once ended a side early).
const stressWorker = `
i=0
while [ ! -e "$STOP" ] && { now=$(date +%s); [ "${now:-0}" -lt "$END" ]; }; do
	i=$((i + 1))
	export K=$((i % 3))
	"$LC" run --quiet --timeout 20s "$L" -- sh -c '
		exec 1>>"$W"
		flock -E 99 -w 0.005 1
		[ $? -ne 99 ] || echo overlap >>"$LOG"
		echo enter >>"$LOG"
		case $K in
		0) { sleep 0.1; flock -u 1; } & exit 0 ;;
		*) sleep 0.02; flock -u 1 ;;
		esac' 2>>"$ERR"
done
`

// stressFixer loops doctor --fix on the lock's directory until $STOP.
const stressFixer = `
while [ ! -e "$STOP" ] && { now=$(date +%s); [ "${now:-0}" -lt "$END" ]; }; do "$LC" doctor --fix --quiet "$D" >/dev/null 2>&1; sleep 0.05; done
`

// TestRunStressAcrossNamespaces is issue 41's stress run: `lockctl run` on
// one directory lock from the host and from a child pid namespace, a
// doctor --fix loop on each side, and SIGKILLs landing on run, on CMD and
// on CMD's children at random. The invariant: no two live processes are
// ever inside the critical section (the witness above), over at least
// LOCKCTL_STRESS_ENTRIES entries: 300 in the suite (about 45 s on CI's two
// cores); docs/performance.md records the 2,000-entry run the issue asks
// for (LOCKCTL_STRESS_ENTRIES=2000, about 5 minutes).
func TestRunStressAcrossNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare --pid needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux)")
	}
	lcFlock(t)
	want := 300
	if s := os.Getenv("LOCKCTL_STRESS_ENTRIES"); s != "" {
		if want, err = strconv.Atoi(s); err != nil || want <= 0 {
			t.Fatalf("LOCKCTL_STRESS_ENTRIES=%q is not a positive number", s)
		}
	}
	limit := 60*time.Second + time.Duration(want)*500*time.Millisecond
	r := lcNewReaper(t)
	dir, files := t.TempDir(), t.TempDir()
	log := filepath.Join(files, "log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"LC=" + lcBinary(t), "D=" + dir, "L=" + filepath.Join(dir, "s.lock"),
		"W=" + filepath.Join(files, "witness"), "LOG=" + log, "ERR=" + filepath.Join(files, "err"),
		"STOP=" + filepath.Join(files, "stop"),
		// The loops end by themselves after the test's limit, should the
		// test binary be killed before it writes $STOP.
		"END=" + strconv.FormatInt(time.Now().Add(limit+time.Minute).Unix(), 10),
	}
	both := stressWorker + "\n"
	side := "(" + stressFixer + ") & (" + both + ") & (" + both + ") & wait"
	host := r.start(env, "/bin/sh", "-c", side)
	ns := r.start(env, unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "/bin/sh", "-c", side)
	roots := []int{host.pid, ns.pid}

	deadline := time.Now().Add(limit)
	kills := 0
	for entries(log) < want && time.Now().Before(deadline) {
		time.Sleep(time.Duration(20+rand.N(40)) * time.Millisecond)
		if host.done() || ns.done() {
			t.Fatalf("a side ended early: host %v, namespace %v: %s", host.done(), ns.done(), ns.errText())
		}
		if victim := stressVictim(roots); victim > 0 {
			if syscall.Kill(victim, syscall.SIGKILL) == nil {
				kills++
			}
		}
	}
	if err := os.WriteFile(filepath.Join(files, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	host.wait(60 * time.Second)
	ns.wait(60 * time.Second)

	data, _ := os.ReadFile(log)
	n, overlaps := bytes.Count(data, []byte("enter\n")), bytes.Count(data, []byte("overlap\n"))
	t.Logf("%d entries, %d SIGKILLs, %d overlaps", n, kills, overlaps)
	if overlaps > 0 {
		t.Errorf("%d of %d entries found another live process inside the critical section", overlaps, n)
	}
	if n < want {
		errs, _ := os.ReadFile(filepath.Join(files, "err"))
		t.Errorf("only %d entries in %s, want %d: the lock wedged or the machine is slow\n%s", n, limit, want, tail(string(errs), 2000))
	}
	if kills < n/20 {
		t.Errorf("only %d SIGKILLs over %d entries: the kills did not land", kills, n)
	}
}

// entries counts the critical sections entered so far.
func entries(log string) int {
	data, _ := os.ReadFile(log)
	return bytes.Count(data, []byte("enter\n"))
}

// stressVictim picks a process to SIGKILL below the roots: a lockctl
// (run, or doctor --fix), a CMD shell, or a child of one (a sleep, a
// subshell, flock(1)), never a side's loop shell, which keeps the side
// going. 0 when there is none.
func stressVictim(roots []int) int {
	var pool []int
	var walk func(pid, depth int)
	walk = func(pid, depth int) {
		for _, c := range lcChildren(pid) {
			// Depth 1 is a side's loop shell or unshare's init, 2 the
			// subshells of the loops; below them are the victims.
			if depth >= 3 {
				pool = append(pool, c)
			}
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 1)
	}
	if len(pool) == 0 {
		return 0
	}
	return pool[rand.N(len(pool))]
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

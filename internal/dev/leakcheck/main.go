//go:build linux

// Command leakcheck tells whether a test run left anything behind (package
// internal/dev/leak says how a run's processes are known). .ci/run uses it
// around the suite:
//
//	leakcheck before FILE   # the mount table and the watched folders, saved
//	...                     # the run, with LOCKCTL_TEST_RUN=ID and a TMPDIR of its own
//	leakcheck after FILE    # fails naming every mount added, every process
//	                        # of run ID still running (killed then), and every
//	                        # file left in /dev/shm, /tmp or HOME outside TMPDIR
//
// after waits a few seconds for processes of the run that are still dying
// before it counts them.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/lockctl/lockctl/internal/dev/leak"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) != 2 || (args[0] != "before" && args[0] != "after") {
		fmt.Fprintln(os.Stderr, "usage: leakcheck before|after FILE")
		return 2
	}
	file := args[1]
	if args[0] == "before" {
		b, _ := json.Marshal(leak.Snapshot())
		if err := os.WriteFile(file, b, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: %v\n", err)
			return 2
		}
		return 0
	}
	var before leak.State
	b, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(b, &before)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "leakcheck: cannot read the state before the run from %s: %v\n", file, err)
		return 2
	}
	id := os.Getenv(leak.Var)
	if id == "" {
		fmt.Fprintf(os.Stderr, "leakcheck: %s is not set, so the run's processes cannot be told apart\n", leak.Var)
		return 2
	}
	var procs []leak.Proc
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if procs = leak.Marked(id); len(procs) == 0 || time.Now().After(deadline) {
			break
		}
	}
	leak.Kill(id)
	mounts, files := leak.Added(before, leak.Snapshot(), os.Getenv("TMPDIR"), file)
	for _, p := range procs {
		fmt.Fprintf(os.Stderr, "leakcheck: the run left a process running (killed now): %s\n", p)
	}
	for _, m := range mounts {
		fmt.Fprintf(os.Stderr, "leakcheck: the run left a mount: %s\n", m)
	}
	for _, f := range files {
		fmt.Fprintf(os.Stderr, "leakcheck: the run left a file outside its TMPDIR: %s\n", f)
	}
	if n := len(procs) + len(mounts) + len(files); n > 0 {
		fmt.Fprintf(os.Stderr, "leakcheck: %d things left behind by run %s\n", n, id)
		return 1
	}
	fmt.Println("leakcheck: nothing left behind")
	return 0
}

//go:build lockctlprof

package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// A developer's build (go build -tags lockctlprof) writes a CPU profile of
// the whole run to $LOCKCTL_CPUPROFILE, and a profile of what it allocated
// to $LOCKCTL_MEMPROFILE, when they are set (docs/performance.md).
// Released builds carry none of this.
func init() {
	if path := os.Getenv("LOCKCTL_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 4096
		stopProfile = func() {
			f, err := os.Create(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, "lockctl: cannot write the memory profile:", err)
				return
			}
			defer f.Close()
			runtime.GC() // the profile is as of the last collection
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
		}
	}
	path := os.Getenv("LOCKCTL_CPUPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockctl: cannot write the CPU profile:", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "lockctl: cannot start the CPU profile:", err)
		f.Close()
		return
	}
	stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
}

package lock

import (
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/verdict"
)

// kern is the real kernel, wired in as internal/cli wires it.
var kern Kernel = judges.Kernel{}

// localHost is this machine, as the wired kernel reads it.
func localHost() verdict.Host { return kern.Host() }

// startOf is a running pid's start time, as the wired kernel reads it.
func startOf(pid int) (uint64, error) { return kern.Start(pid) }

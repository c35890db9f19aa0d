//go:build !unix

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/urfave/cli/v2"
)

// gateCommand is the process that holds CMD at the gate: lockctl itself,
// as __gate, where there is no POSIX shell to be the gate.
func gateCommand(cmdArgs []string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find lockctl's own executable: %w", err)
	}
	cmd := exec.Command(self, append([]string{"__gate", "--"}, cmdArgs...)...)
	cmd.Args[0] = "lockctl"
	return cmd, nil
}

func gateCommands() []*cli.Command {
	return []*cli.Command{{
		Name:   "__gate",
		Hidden: true,
		Usage:  "internal: wait for lockctl run to hold the lock, then exec CMD",
		Action: gateAction,
	}}
}

// gateAction runs in CMD's process: it waits on fd 4 for lockctl run to
// say the lock is held, then becomes CMD. If lockctl dies or gives up
// first, fd 4 reads end-of-file and CMD never runs.
func gateAction(c *cli.Context) error {
	f := os.NewFile(4, "gate")
	var b [3]byte
	if n, _ := f.Read(b[:]); n != 3 || string(b[:]) != "go\n" {
		return &exitCode{code: ExitTimeout}
	}
	f.Close()
	args := c.Args().Slice()
	if len(args) == 0 {
		return usageErr("__gate: no command")
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return &exitCode{code: ExitNotFound, err: fmt.Errorf("cannot run %s: %w", args[0], err)}
	}
	err = syscall.Exec(path, args, os.Environ())
	return &exitCode{code: ExitCannotRun, err: fmt.Errorf("cannot run %s: %w", args[0], err)}
}

//go:build unix

package cli

import (
	"os/exec"

	"github.com/urfave/cli/v2"
)

// gateScript is the gate CMD's process waits at, run by /bin/sh: it
// reads the word lockctl run writes on fd 4 once the lock, whose record
// names this very process, is in place, and only then becomes CMD (exec
// keeps the pid and the start time the record fences), keeping fd 3, the
// lock's directory with its flock, for CMD to inherit. If lockctl dies or
// gives up first, fd 4 reads end-of-file and CMD never runs. A shell costs
// a fraction of a second start of lockctl, the gate's first form (issue
// 19).
const gateScript = `read -r go <&4 && [ "$go" = go ] || exit 75; exec 4<&-; exec "$@"`

// gateCommand is the process that holds CMD at the gate.
func gateCommand(cmdArgs []string) (*exec.Cmd, error) {
	return exec.Command("/bin/sh", append([]string{"-c", gateScript, "lockctl"}, cmdArgs...)...), nil
}

// gateCommands are the hidden commands the gate needs: none, here.
func gateCommands() []*cli.Command { return nil }

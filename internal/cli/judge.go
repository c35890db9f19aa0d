package cli

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/internal/remote"
)

// judgeCommand is lockctl judge: the answering end of doctor --via, run
// on the host a foreign lock's record names.
func judgeCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:  "judge",
		Usage: "judge lock records sent on standard input against this host (the far end of doctor --via)",
		Description: `Reads a request from doctor --via on standard input (JSON, at most 1 MiB:
each record's path, format and bytes), judges each record against this
host's kernel by the same rules as doctor, and writes the verdicts, with
this host's name, machine id and boot id, as JSON on standard output.

It only reads: it never writes, removes or takes anything. It reads the
lock at each path sent, since a lock's kernel locks and its holders' open
files can be asked only of the lock itself; a record it cannot read there,
or whose bytes there are not those sent, is unknown.

A record sent with a claim (doctor --fix --via, after claiming the lock on
its side) is read at the claim's path, which must be beside the lock (its
directory, named <lock>.dead.<...>; anything else is unknown), and judged
as the lock's record: the removal there waits on this verdict.

Exit status: 0 answered; 2 a request it cannot read.`,
		OnUsageError: onUsage,
		Action:       judgeAction,
	}
}

func judgeAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("judge takes no arguments: the request comes on standard input")
	}
	req, err := remote.ReadRequest(os.Stdin)
	if err != nil {
		return &exitCode{code: ExitError, err: fmt.Errorf("judge: %w", err), hint: "lockctl judge is run by 'lockctl doctor --via CMD' on another host"}
	}
	host := judges.Host()
	a := remote.Judge(req, host, judges.Doctor(host, false))
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s\n", b)
	return err
}

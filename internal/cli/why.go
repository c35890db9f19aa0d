package cli

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/lockctl/lockctl/internal/why"
	"github.com/lockctl/lockctl/report"
)

// whyCommand is lockctl why PID...: what each process waits for, who
// holds it, and what that holder waits for, to the end of the chain.
func whyCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:      "why",
		Usage:     "say what a stuck process waits for, who holds it, and what that holder waits for",
		ArgsUsage: "PID...",
		Description: `Starting at each PID, walks the process and its descendants (a shell in
wait4 waits on its children) and, for each task blocked in a lock wait,
says on what: a task blocked in flock(2) or fcntl(F_SETLKW, F_OFD_SETLKW),
read from /proc/<tid>/syscall and the descriptor it names, corroborated by
the blocked request in /proc/locks; or a lockctl acquire, run or reserve
waiting, which marks its own wait (never guessed from its command line).
Each lock is judged as doctor judges it, and each holder is walked in turn,
to the end of the chain: a holder that runs, or waits on something that is
not a lock (a pipe, a child, the network: said as such); a holder that is
gone (with the doctor --fix line); a cycle, named as a deadlock (flock has
no deadlock detection); or a doubt, where this reader cannot read a task's
system call or descriptors (another user's process, a missing
CAP_SYS_PTRACE), said with its reason and never taken as a conclusion.
Processes in another pid namespace are named by both pids.

Exit status: 0 when every chain ends in a holder that runs, or no lock wait
was found (a wait on a live holder is a normal state); 1 when a chain ends
in a gone holder or a cycle; 2 for usage, or a PID that is no process.`,
		OnUsageError: onUsage,
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the chains as JSON (versioned like doctor's)"}},
		Action:       whyAction,
	}
}

func whyAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return usageErr("why: give at least one PID")
	}
	var pids []int
	for _, a := range c.Args().Slice() {
		n, err := strconv.Atoi(a)
		if err != nil || n <= 0 {
			return usageErr("why: %q is not a pid", a)
		}
		pids = append(pids, n)
	}
	rep, err := why.Explain(pids)
	if err != nil {
		return &exitCode{code: ExitError, err: fmt.Errorf("why: %w", err), hint: "'ps -e' lists the processes here"}
	}
	if c.Bool("json") {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "%s\n", b)
	} else {
		why.Text(c.App.Writer, rep, report.Clean)
	}
	if rep.Bad() {
		return &exitCode{code: ExitAttention}
	}
	return nil
}

// acquireError: how a lock command's ended wait becomes an exit status, a
// message and the operator's next step.

package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/report"
	"github.com/lockctl/lockctl/scan"
)

// acquireError maps an ended wait to an exit status, a message and the
// operator's next step.
func acquireError(path string, err error) error {
	var (
		held      *lock.HeldError
		ownerless *lock.OwnerlessError
		foreign   *lock.ForeignError
		unknown   *lock.UnknownError
	)
	q := report.ShellQuote(path)
	var again *lock.AlreadyHeldError
	var stuck *lock.GoneError
	var badPath *lock.BadPathError
	var slots *lock.SlotsHeldError
	switch {
	case errors.As(err, &badPath):
		return &exitCode{code: ExitError, err: err}
	case errors.As(err, &slots):
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("every slot is held: 'lockctl doctor %s' shows who holds each", report.ShellQuote(filepath.Dir(slots.Path)))}
	case errors.As(err, &stuck) && stuck.Why == scan.InPlaceRule:
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("once nothing that uses it runs, remove it by hand; 'lockctl doctor %s' shows its holder", q)}
	case errors.As(err, &stuck):
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("ask the lock's owner, or root, to run 'lockctl doctor --fix %s'", q)}
	case errors.As(err, &again):
		return &exitCode{code: ExitAttention, err: err, hint: fmt.Sprintf("it holds the lock already: release it first ('lockctl release %s'), or go on holding it", q)}
	case errors.As(err, &held) && held.Holder.Reserved:
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("it is reserved for a worker that has not started yet: wait for the worker to adopt it and finish, or for the grace to pass; 'lockctl doctor %s' shows the deadline", q)}
	case errors.As(err, &held) && held.Holder.Pid <= 0:
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("the kernel holds it for its holder: wait for it; 'lockctl doctor %s' shows what can be seen of it", q)}
	case errors.As(err, &held):
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("pid %d is running: wait for it, or deal with that process (not the lock); 'lockctl doctor %s' shows the details", held.Holder.Pid, q)}
	case errors.As(err, &ownerless) && ownerless.EmptyFile:
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("an empty file is one of two things, and its bytes cannot tell which. A kernel lock (flock(1) leaves one behind) is free while no process holds it: take it with 'lockctl run --kind flock %s -- CMD', which leaves the file in place. An existence lock's live holder may keep no file open, and removing it lets a second holder in: ask the program that uses it (its own tools or documentation), since lockctl cannot tell", q)}
	case errors.As(err, &ownerless):
		how := "lockctl cannot read its bytes as a record, so it proposes no removal: ask the program that wrote it (its own tools or documentation)"
		if cmds := report.Commands(ownerless.Remove); len(cmds) > 0 {
			how = "remove it with: " + strings.Join(cmds, " && ")
		}
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("lockctl never breaks a lock without an owner record, because one taken a moment ago looks the same. If nothing is using it, %s. 'lockctl doctor' lists all such locks", how)}
	case errors.As(err, &foreign):
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("judge it where it was written: 'lockctl doctor %s' there", q)}
	case errors.As(err, &unknown):
		return &exitCode{code: ExitTimeout, err: err, hint: fmt.Sprintf("'lockctl doctor %s' shows what could not be judged", q)}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &exitCode{code: ExitTimeout, err: err}
	}
	return &exitCode{code: ExitAttention, err: err}
}

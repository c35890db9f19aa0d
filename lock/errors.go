package lock

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// HeldError ends a wait on a lock whose holder is alive. It names the
// holder.
type HeldError struct {
	Path   string
	Holder scan.Holder
	Reason string
	Err    error // why the wait ended: the context's error
	// ByKernel says Holder is the process holding the lock's kernel lock
	// (the recorded holder being gone), not the record's.
	ByKernel bool
}

func (e *HeldError) Error() string {
	h := e.Holder
	if h.Pid <= 0 || h.Reserved {
		return fmt.Sprintf("timed out acquiring %s: %s", e.Path, e.Reason)
	}
	s := fmt.Sprintf("timed out acquiring %s: held by pid %d", e.Path, h.Pid)
	if h.Command != "" {
		s += " (" + h.Command + ")"
	}
	if h.Host != "" {
		s += " on " + h.Host
	}
	if e.ByKernel {
		return s + ", which holds its kernel lock: " + e.Reason
	}
	if !h.Since.IsZero() {
		s += " since " + h.Since.UTC().Format(time.RFC3339)
	}
	return s + ", which is still running"
}

func (e *HeldError) Unwrap() error { return e.Err }

// who says who holds the lock, for a wait that goes on.
func (e *HeldError) who() string {
	if e.Holder.Pid <= 0 || e.Holder.Reserved {
		return e.Reason
	}
	s := fmt.Sprintf("held by pid %d", e.Holder.Pid)
	if e.Holder.Command != "" {
		s += " (" + e.Holder.Command + ")"
	}
	return s
}

// GoneError ends a wait on a lock whose holder is gone but that this
// acquirer could not break (Why: a directory it may not write, a file
// system without RENAME_NOREPLACE, ...).
type GoneError struct {
	Path, Reason, Why string
	Err               error
}

func (e *GoneError) Error() string {
	return fmt.Sprintf("timed out acquiring %s: its holder is gone (%s), but it could not be broken: %s", e.Path, e.Reason, e.Why)
}

func (e *GoneError) Unwrap() error { return e.Err }

// AlreadyHeldError is the answer to an acquire by the holder the lock's
// record already names: it holds the lock, and waiting would wait on
// itself.
type AlreadyHeldError struct {
	Path   string
	Holder scan.Holder
}

func (e *AlreadyHeldError) Error() string {
	return fmt.Sprintf("%s is already held by pid %d, the holder asking for it", e.Path, e.Holder.Pid)
}

// OwnerlessError ends a wait on a lock that has no usable owner record, so
// nothing can tell whether it is held. It is never broken automatically.
type OwnerlessError struct {
	Path   string
	Reason string
	// Remove is how to remove the lock by hand, once it is known that
	// nothing uses it.
	Remove []verdict.Step
	// EmptyFile says the lock is an empty file of unknown kind: a kernel
	// lock flock(1) left behind, or an existence lock (verdict.EmptyFileReadings).
	EmptyFile bool
	Err       error
}

func (e *OwnerlessError) Error() string {
	return fmt.Sprintf("timed out acquiring %s: it has no owner record (%s)", e.Path, e.Reason)
}

func (e *OwnerlessError) Unwrap() error { return e.Err }

// ForeignError ends a wait on a lock recorded on another host or in another
// pid namespace, which cannot be judged here.
type ForeignError struct {
	Path   string
	Reason string
	Err    error
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("timed out acquiring %s: %s", e.Path, e.Reason)
}

func (e *ForeignError) Unwrap() error { return e.Err }

// UnknownError ends a wait on a lock that could not be judged (permission,
// a pid out of range, a recycled pid, a break under way).
type UnknownError struct {
	Path   string
	Reason string
	Err    error
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("timed out acquiring %s: cannot tell whether it is held: %s", e.Path, e.Reason)
}

func (e *UnknownError) Unwrap() error { return e.Err }

// TakenOverError is returned by Release when the record at the lock is no
// longer the one this holder wrote: the lock was broken and taken by
// someone else. Nothing was removed.
type TakenOverError struct {
	Path   string
	Reason string
}

func (e *TakenOverError) Error() string {
	return fmt.Sprintf("cannot release %s: %s; nothing was removed", e.Path, e.Reason)
}

// StillHeldError is a release that left the lock in place because another
// process still holds its kernel lock (a child of CMD that kept fd 3, or a
// flock(1) granted the lock as this holder let go) or waits for it, or has
// it open (Waiting). Nothing was removed: the lock lives on in that
// process, doctor and acquire judge it by that kernel lock until the
// process closes it, and then it reads gone and the next acquire breaks
// it. By names who holds or waits, where the kernel says.
type StillHeldError struct {
	Path    string
	By      []verdict.KernelHolder
	Waiting bool
}

func (e *StillHeldError) Error() string {
	how := "still holds its kernel lock"
	if e.Waiting {
		how = "waits for it or has it open"
	}
	who := "another process"
	if len(e.By) > 0 {
		h := e.By[0]
		who = fmt.Sprintf("pid %d", h.Pid)
		if h.Comm != "" {
			who += " (" + h.Comm + ")"
		}
		if len(e.By) > 1 {
			who += fmt.Sprintf(" and %d more", len(e.By)-1)
		}
	}
	return fmt.Sprintf("left %s in place: %s %s (a child that kept fd 3, or flock(1) on the path); it stays held until that process closes it, and then the next acquire takes it", e.Path, who, how)
}

// NotHolderError is returned when a process that is not the recorded
// holder asks to release a lock. Nothing was touched.
type NotHolderError struct {
	Path   string
	Pid    int
	Holder scan.Holder
}

func (e *NotHolderError) Error() string {
	return fmt.Sprintf("refusing to release %s: it is held by pid %d (%s), not by pid %d; nothing was touched",
		e.Path, e.Holder.Pid, e.Holder.Command, e.Pid)
}

// BadPathError says a path cannot be a lock, or cannot be one lockctl
// could ever break: the command line is wrong, and waiting would not help.
type BadPathError struct {
	Path, Why string
}

func (e *BadPathError) Error() string { return fmt.Sprintf("%q %s", e.Path, e.Why) }

// SlotsHeldError ends a wait for a slot of a counting lock (Options.Slots)
// whose every slot stayed held. Last is why the last slot tried was not
// taken, one of the errors above.
type SlotsHeldError struct {
	Path  string
	Slots int
	Last  error
}

func (e *SlotsHeldError) Error() string {
	return fmt.Sprintf("timed out acquiring a slot of %s: all %d slots are held; the last one tried: %v", e.Path, e.Slots, e.Last)
}

func (e *SlotsHeldError) Unwrap() error { return e.Last }

// Package why answers "why is this process stuck?": starting at a
// process, it walks the process and its descendants, says for each task
// blocked in a lock wait which lock it waits on and who holds it, and
// follows each holder's own waits, to the end of the chain: a holder that
// runs, a holder that is gone, a doubt, or a cycle (a deadlock).
//
// Every wait is read from the kernel (/proc/<tid>/syscall, the fd it
// names, /proc/locks) or said by the waiter itself (a waiting lockctl's
// mark, kernel.MarkWait); nothing is guessed from a command line.
package why

import (
	"fmt"
	"strconv"
)

// Version is the version of the JSON form (Report). It grows when a field
// is added; a reader ignores what it does not know.
const Version = 1

// Report is what why found, from each process it was asked about.
type Report struct {
	Version int `json:"version"`
	// Processes are the trees, one per pid asked about.
	Processes []*Proc `json:"processes"`
	// Ends are where the chains end: each distinct end once.
	Ends []End `json:"ends"`
}

// Proc is a process, what it is doing, and its descendants.
type Proc struct {
	Pid int `json:"pid"`
	// NSPids are its pids in the pid namespaces below the reader's, the
	// innermost last (/proc/<pid>/status NSpid); empty in the reader's own.
	NSPids  []int  `json:"ns_pids,omitempty"`
	PidNS   string `json:"pid_ns,omitempty"`
	Command string `json:"command"`
	// Doing says what it does where it is not in a lock wait: "running",
	// "sleeping in nanosleep", "reading pipe:[123]", "waits for its
	// children", …
	Doing string `json:"doing"`
	// Waits are its lock waits (each of its threads', and a lockctl's).
	Waits []*Wait `json:"waits,omitempty"`
	// Doubt says why what it does could not be read, where it could not.
	Doubt string `json:"doubt,omitempty"`
	// Children are the descendants that wait on a lock, or lead to one
	// that does; Quiet counts the others.
	Children []*Proc `json:"children,omitempty"`
	Quiet    int     `json:"quiet_children,omitempty"`
	// Cycle is set where this process is already on the chain that led to
	// it: the chain is a deadlock, and it is not walked again.
	Cycle bool `json:"cycle,omitempty"`
}

// Wait is one lock wait: the lock, how it is waited for, its judgement,
// and its holders, each walked in turn.
type Wait struct {
	// Tid is the waiting thread, where it is not the process's main one.
	Tid int `json:"tid,omitempty"`
	// How is "flock", "POSIX lock", "OFD lock" (a task blocked in that
	// call), or "lockctl" (a lockctl acquire, run or reserve waiting).
	How string `json:"how"`
	// Mode is "exclusive" or "shared", where it was read.
	Mode string `json:"mode,omitempty"`
	Path string `json:"path"`
	// InTable says /proc/locks shows the blocked request (a "->" line
	// for this file); false where it does not or could not be read.
	InTable bool `json:"in_lock_table"`
	// Verdict and Reason are doctor's judgement of the lock.
	Verdict string `json:"verdict,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Fix is the command that removes the lock, where its holder is gone.
	Fix string `json:"fix,omitempty"`
	// Holders are the processes holding it, each walked.
	Holders []*Proc `json:"holders,omitempty"`
	// End is where this wait's chain ends: "runs", "gone", "cycle" or
	// "doubt".
	End string `json:"end"`
	// EndWhy says it in words.
	EndWhy string `json:"end_why"`

	dev, ino uint64 // the file waited on, where a lock call names it
}

// End is one end of a chain, said once per report.
type End struct {
	Kind string `json:"kind"`
	Why  string `json:"why"`
}

// Bad says whether a report's chains end where an operator must act: a
// gone holder or a cycle.
func (r *Report) Bad() bool {
	for _, e := range r.Ends {
		if e.Kind == EndGone || e.Kind == EndCycle {
			return true
		}
	}
	return false
}

// The ends of a chain.
const (
	EndRuns  = "runs"
	EndGone  = "gone"
	EndCycle = "cycle"
	EndDoubt = "doubt"
)

// Brief says, in one clause, what holder pid itself waits on, for a
// waiter's message ("which waits on /srv/db.lock, held by pid 77
// (backup)"), or "" when it is in no lock wait or cannot be read.
func Brief(pid int) string {
	rep, err := Explain([]int{pid})
	if err != nil || len(rep.Processes) == 0 {
		return ""
	}
	wt := firstWait(rep.Processes[0])
	if wt == nil {
		return ""
	}
	s := "which waits on " + wt.Path
	for i, h := range wt.Holders {
		if i == 0 {
			s += ", held by"
		} else {
			s += " and"
		}
		s += fmt.Sprintf(" pid %d (%s)", h.Pid, h.Command)
	}
	switch wt.End {
	case EndGone:
		s += ", whose holder is gone"
	case EndCycle:
		s += ": a deadlock ('lockctl why " + strconv.Itoa(pid) + "' names it)"
	}
	return s
}

// firstWait is the first lock wait in p's tree.
func firstWait(p *Proc) *Wait {
	if len(p.Waits) > 0 {
		return p.Waits[0]
	}
	for _, c := range p.Children {
		if w := firstWait(c); w != nil {
			return w
		}
	}
	return nil
}

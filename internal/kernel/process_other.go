//go:build !linux

// What cli asks of one process by its pid; without Linux's /proc there is
// nothing to read.

package kernel

// Command cannot read a process's command here: "".
func Command(pid int) string { return "" }

// Program cannot read a process's executable here: "".
func Program(pid int) string { return "" }

// Parent cannot read a process's parent here: 0.
func Parent(pid int) int { return 0 }

// Leader cannot read a task's process here: 0.
func Leader(tid int) int { return 0 }

// EndlessPid reports whether pid is the machine's init, which never exits:
// pid 1 here.
func EndlessPid(pid int) bool { return pid == 1 }

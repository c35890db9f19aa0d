//go:build linux

package cli

import (
	"os/exec"
	"syscall"
)

// ownGroup puts CMD in a process group of its own when lockctl is not in
// a terminal's foreground (fg false), so that a signal sent to lockctl's
// whole group (kill -- -PGID, coreutils timeout, a CI runner stopping a
// job) reaches CMD once, passed on by lockctl, and not twice (issue 31,
// item 7). A SIGKILL, which lockctl cannot pass on, then reaches lockctl
// alone: CMD runs on holding the lock, as it does when lockctl alone is
// killed (the lock records both). At a terminal's foreground CMD stays in
// lockctl's group, where the terminal's Ctrl-C reaches it directly and
// lockctl does not pass it on (forwardSignal), and where CMD can read the
// terminal.
func ownGroup(cmd *exec.Cmd, fg bool) {
	if fg {
		return
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

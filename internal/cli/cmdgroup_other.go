//go:build !linux

package cli

import "os/exec"

// ownGroup: CMD stays in lockctl's process group where there is no
// parent-death signal to keep its life bound to lockctl's.
func ownGroup(cmd *exec.Cmd, fg bool) {}

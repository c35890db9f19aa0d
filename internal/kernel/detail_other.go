//go:build !linux

package kernel

import "github.com/lockctl/lockctl/verdict"

// Detail cannot read another process here: nil.
func Detail(pid int) *verdict.ProcDetail { return nil }

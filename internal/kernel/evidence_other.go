//go:build !linux

package kernel

import "github.com/lockctl/lockctl/verdict"

// KernelEvidence cannot read the kernel's tables on this platform: it is
// verdict.NoEvidence, never finding a holder and always incomplete.
type KernelEvidence struct {
	// Probe and Fresh are as on Linux; they are unused here.
	Probe   verdict.Probe
	Fresh   bool
	Vouched map[int]uint64
}

// Holders implements Evidence.
func (k *KernelEvidence) Holders(dev, ino uint64) ([]verdict.KernelHolder, bool) {
	return verdict.NoEvidence{}.Holders(dev, ino)
}

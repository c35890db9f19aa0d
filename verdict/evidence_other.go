//go:build !linux

package verdict

// KernelEvidence cannot read the kernel's tables on this platform: it is
// NoEvidence, never finding a holder and always incomplete.
type KernelEvidence struct {
	// Probe and Fresh are as on Linux; they are unused here.
	Probe Probe
	Fresh bool
}

// Holders implements Evidence.
func (k *KernelEvidence) Holders(dev, ino uint64) ([]KernelHolder, bool) {
	return NoEvidence{}.Holders(dev, ino)
}

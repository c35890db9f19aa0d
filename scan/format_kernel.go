package scan

import "strings"

// KernelRecord is the whole content of a kernel-lock file that lockctl
// created (docs/record-format.md): it marks the file as a kernel lock, held while
// a process has an flock on it, so that doctor calls it free when none does
// and lockctl run takes it without being told the kind. It names no holder:
// the kernel does.
const KernelRecord = "lockctl-kernel-lock 1\n"

// FormatKernel is lockctl's own kernel-lock file: KernelRecord.
const FormatKernel Format = "kernel"

// lockctl's own kernel-lock file. ParsePidFile reads its one line
// (FormatKernel); the walk marks it KernelLock "lockctl".
var formatKernel = FormatSpec{
	Name:     "kernel",
	Formats:  []Format{FormatKernel},
	Room:     "format_kernel.go",
	Names:    []string{"*.lock"},
	Parse:    func(b []byte) (*Holder, error) { _, h, err := ParsePidFile(b); return h, err },
	Fuzz:     []string{"scan:FuzzParsePidFile"},
	Rule:     "Held while the kernel's lock table shows a lock on the file; free when the whole table shows none.",
	Remedy:   "never removed: a free one is taken again with lockctl run --kind flock.",
	Source:   "docs/record-format.md; lock/kernel.go, AcquireKernel",
	Verdicts: []string{"live", "free", "unknown"},
}

// kernelFileAt says path ends in one of suffixes, each starting a
// component (a chroot's or a container's root, and dpkg --root, put a
// prefix before it).
func kernelFileAt(path string, suffixes ...string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(path, s) {
			return true
		}
	}
	return false
}

// isKernelFile says the lock file l, just read, is lockctl's own
// kernel-lock file.
func isKernelFile(l *Lock) bool { return l.Format == FormatKernel }

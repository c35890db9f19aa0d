package verdict

// KernelHolder is a process that, by the kernel's own tables, holds a file:
// by an advisory lock on it, or by having it open.
type KernelHolder struct {
	Pid  int
	Comm string
	// How is "flock", "POSIX lock", "OFD lock" or "open".
	How string
}

// Evidence answers, for a lock that carries no usable owner record, who the
// kernel says holds it. It is gathered once per run, and only when some
// lock needs it.
type Evidence interface {
	// Holders returns the running processes that hold the file dev:ino.
	// complete is false when some processes' open files could not be seen
	// (not running as root), so that finding none proves nothing.
	Holders(dev, ino uint64) (hs []KernelHolder, complete bool)
}

// Seen says how far kernel evidence was looked for, for a lock without a
// usable owner record.
type Seen int

// How far kernel evidence was looked for.
const (
	SeenNothing  Seen = iota // not looked for (no Evidence, or not needed)
	SeenPartial              // looked, found no holder, but could not see every process
	SeenComplete             // looked at every process: no holder
)

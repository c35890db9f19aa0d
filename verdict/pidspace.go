package verdict

import "sync"

// Namesake is a live process, or a live thread of one, that has, in a pid
// namespace below the reader's, the pid some record names: a container's
// process or thread, seen from the host. (A thread's id names its process
// to kill(2) and in /proc, so a pid file may hold it.)
type Namesake struct {
	// Pid is its pid in the reader's namespace, Inner the one it has in
	// namespace NS (a link such as "pid:[4026532210]").
	Pid   int
	Inner int
	Comm  string
	NS    string
	// Leader is, for a thread that is not its process's leader, that
	// leader's pid in the reader's namespace (Pid and Inner are then the
	// thread's ids, Comm its name); 0 for a process.
	Leader int
}

// PidSpace is a Probe that can see past the reader's own pid numbers. A pid
// that is absent here proves its holder gone only if the reader sees the
// holder's pid space: a record that names its pid namespace is judged in
// that namespace, and one that does not (a bare pid file, generation A)
// could have been written in any, so only a reader that sees every
// namespace, and finds the pid in none, can call it gone.
//
// Both methods fail (with an error that says why, for the operator) rather
// than answer from a partial view: a reader in a child pid namespace, a
// /proc of another namespace or one that hides processes (hidepid, subset),
// a process whose status or namespace cannot be read.
type PidSpace interface {
	// Namesakes indexes every live process that has a pid of its own in a
	// pid namespace below the reader's, by each such inner pid.
	Namesakes() (map[int][]Namesake, error)
	// NamespaceInUse reports whether any process is in pid namespace ns
	// (a link such as "pid:[4026532210]"). A namespace with no process in
	// it has ended: once its init has exited nothing can enter it again.
	// Its inode number may be given to a new namespace at once, so the
	// answer is never remembered: each judgement that rests on it asks.
	NamespaceInUse(ns string) (bool, error)
}

// PidNamesakes is a PidSpace that can answer for one pid without a look at
// every process each time: Namesakes()[inner], as fresh. The kernel's probe
// answers from its last look while no process has been created since.
type PidNamesakes interface {
	NamesakesOf(inner int) ([]Namesake, error)
}

// namesakes is the part of CachingProbe that remembers the index of
// namesakes for the run. (NamespaceInUse is passed through, never cached.)
type namesakes struct {
	once sync.Once
	idx  map[int][]Namesake
	err  error
}

// Namesakes implements PidSpace, asking the next probe once per run.
func (c *CachingProbe) Namesakes() (map[int][]Namesake, error) {
	c.ns.once.Do(func() {
		ps, ok := c.Next.(PidSpace)
		if !ok {
			c.ns.err = errNoPidSpace
			return
		}
		c.ns.idx, c.ns.err = ps.Namesakes()
	})
	return c.ns.idx, c.ns.err
}

// NamespaceInUse implements PidSpace. It is asked afresh every time.
func (c *CachingProbe) NamespaceInUse(ns string) (bool, error) {
	ps, ok := c.Next.(PidSpace)
	if !ok {
		return false, errNoPidSpace
	}
	return ps.NamespaceInUse(ns)
}

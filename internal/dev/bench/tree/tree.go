// Package tree builds synthetic lock registries for benchmarks: a directory
// tree of mostly plain files, nested a few levels deep, with locks of every
// format lockctl reads scattered through it, whose holders are a handful of
// live processes shared by many locks, pids of processes that have been
// started and reaped, or nobody at all.
//
// The kinds a tree holds, how many holders they share and how deep the
// leaves are come from its Spec; Mixes names the fixed settings the
// benchmark runs (issue 32), so that no single tree is what the figures
// rest on.
//
// It is used by the Go benchmarks of package scan and by the reproducible
// benchmark in internal/dev/bench (docs/performance.md).
package tree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Kind is one sort of lock the generator writes.
type Kind string

// The kinds of lock, in the order they are dealt out (lock i is
// Kinds[i%len(Kinds)]): four gone, four live, two owner-less.
const (
	GonePid       Kind = "gone-pid"        // "<reaped pid>\n"
	GoneRegistryA Kind = "gone-registry-a" // dir + <lock>.holder naming a reaped pid
	GoneLockctl   Kind = "gone-lockctl"    // lockctl's own record naming a reaped pid
	GoneUUCP      Kind = "gone-uucp"       // "%10d\n" of a reaped pid
	LivePid       Kind = "live-pid"        // "<live pid>\n"
	LiveRegistryB Kind = "live-registry-b" // dir with holder.<token>, scoped to this host
	LiveLockctl   Kind = "live-lockctl"    // lockctl's record, fenced by the live pid's start time
	LiveKeyValue  Kind = "live-pid-kv"     // "pid=<live pid>\nhost=<host>\n"
	OwnerlessDir  Kind = "ownerless-dir"   // an empty directory
	OwnerlessZero Kind = "ownerless-zero"  // a file saying "0"
)

// Kinds beyond the default tree's (issue 32), used by the mixes.
const (
	GoneKeyValue Kind = "gone-pid-kv"   // "pid=<reaped pid>\nhost=<host>\n"
	GoneFilelock Kind = "gone-filelock" // Python filelock's "<reaped pid>\n<host>\n"
	LiveFilelock Kind = "live-filelock" // "<live pid>\n<host>\n"
	LiveUUCP     Kind = "live-uucp"     // "%10d\n" of a live pid
	KernelFree   Kind = "kernel-free"   // lockctl's kernel-lock file, nobody holding it
	EmptyIdle    Kind = "empty-idle"    // an empty file, as flock(1) leaves one
)

// Kinds lists the default tree's kinds in dealing order.
var Kinds = []Kind{GonePid, GoneRegistryA, GoneLockctl, GoneUUCP, LivePid, LiveRegistryB, LiveLockctl, LiveKeyValue, OwnerlessDir, OwnerlessZero}

// AllKinds lists every kind the generator writes.
var AllKinds = []Kind{GonePid, GoneRegistryA, GoneLockctl, GoneUUCP, GoneKeyValue, GoneFilelock,
	LivePid, LiveRegistryB, LiveLockctl, LiveKeyValue, LiveFilelock, LiveUUCP,
	OwnerlessDir, OwnerlessZero, KernelFree, EmptyIdle}

var (
	goneKinds = []Kind{GonePid, GoneUUCP, GoneKeyValue, GoneLockctl, GoneRegistryA, GoneFilelock}
	liveKinds = []Kind{LivePid, LiveUUCP, LiveKeyValue, LiveLockctl, LiveRegistryB, LiveFilelock}
	halfKinds = []Kind{GonePid, LivePid, GoneUUCP, LiveUUCP, GoneKeyValue, LiveKeyValue,
		GoneLockctl, LiveLockctl, GoneRegistryA, LiveRegistryB, GoneFilelock, LiveFilelock}
)

// Mix is a fixed setting of the generator: which kinds, how many holders,
// how deep. Lock i is Kinds[i%len(Kinds)].
type Mix struct {
	Name  string
	About string
	Kinds []Kind
	Live  int // live holder processes
	Gone  int // distinct reaped pids
	Depth int // levels from the root to a leaf directory (1: one directory)
}

// Mixes are the named trees of issue 32, "default" first: the tree
// docs/performance.md measured before them.
var Mixes = []Mix{
	{"default", "ten kinds: 4 gone, 4 live (4 processes), 2 owner-less", Kinds, 4, 50, 3},
	{"all-dead", "every holder gone: pid, uucp, pid-kv, lockctl, registry-a, filelock", goneKinds, 0, 50, 3},
	{"all-live", "every holder live: pid, uucp, pid-kv, lockctl, registry-b, filelock", liveKinds, 4, 0, 3},
	{"half", "half gone, half live, the same six formats each", halfKinds, 4, 50, 3},
	{"many-holders", "half and half, 500 live processes and 5,000 reaped pids", halfKinds, 500, 5000, 3},
	{"one-holder", "the default kinds, 1 live process and 1 reaped pid", Kinds, 1, 1, 3},
	{"deep", "the default kinds, leaf directories 30 levels down", Kinds, 4, 50, 30},
	{"shallow", "the default kinds, every entry in one directory", Kinds, 4, 50, 1},
	{"formats", "every kind: adds filelock, dead pid-kv, free kernel-lock files, empty files", AllKinds, 4, 50, 3},
}

// MixNamed returns the mix called name.
func MixNamed(name string) (Mix, bool) {
	for _, m := range Mixes {
		if m.Name == name {
			return m, true
		}
	}
	return Mix{}, false
}

// Proc is a live process a lock can name.
type Proc struct {
	Pid   int
	Start uint64 // field 22 of /proc/<pid>/stat
}

// Procs are the holders the generator hands out: live sleep processes and
// pids of processes that were started and reaped.
type Procs struct {
	Live []Proc
	Gone []int
	cmds []*exec.Cmd
}

// StartProcs starts nLive `sleep` processes and collects nGone distinct pids
// of processes that ran and were reaped. Stop the live ones with Stop.
func StartProcs(nLive, nGone int) (*Procs, error) {
	p := &Procs{}
	for i := 0; i < nLive; i++ {
		c := exec.Command("sleep", "86400")
		if err := c.Start(); err != nil {
			p.Stop()
			return nil, err
		}
		p.cmds = append(p.cmds, c)
		pr := kernel.KernelProbe{}.Probe(c.Process.Pid)
		if pr.State != verdict.StateRunning || !pr.HasStart {
			p.Stop()
			return nil, fmt.Errorf("cannot read the start time of pid %d: %v", c.Process.Pid, pr.Err)
		}
		p.Live = append(p.Live, Proc{Pid: c.Process.Pid, Start: pr.Start})
	}
	seen := map[int]bool{}
	for len(p.Gone) < nGone {
		c := exec.Command("true")
		if err := c.Run(); err != nil {
			p.Stop()
			return nil, err
		}
		if pid := c.Process.Pid; !seen[pid] {
			seen[pid] = true
			p.Gone = append(p.Gone, pid)
		}
	}
	return p, nil
}

// StartOpeners starts n sleep processes, each holding k files of dir
// open (files of its own, made here), and returns what stops and reaps
// them: the other processes of a busy machine, whose descriptors doctor
// reads for an owner-less lock.
func StartOpeners(dir string, n, k int) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		cmds = nil
	}
	files := make([]*os.File, k)
	for i := range files {
		if files[i], err = os.Create(filepath.Join(dir, fmt.Sprintf("opened.%d", i))); err != nil {
			stop()
			return nil, err
		}
		defer files[i].Close()
	}
	for range n {
		c := exec.Command("sleep", "86400")
		c.ExtraFiles = files
		if err := c.Start(); err != nil {
			stop()
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// Stop kills and reaps the live processes.
func (p *Procs) Stop() {
	for _, c := range p.cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	p.cmds = nil
}

// Spec says what to build.
type Spec struct {
	// Entries is the number of names in the tree below the root, counting
	// directories, plain files, locks and the files that belong to locks.
	Entries int
	// Locks is how many locks there are among them.
	Locks int
	// PerDir is roughly how many entries a leaf directory holds (default 100).
	PerDir int
	// Seed makes the placement of the locks reproducible.
	Seed uint64
	// Host names this machine, boot and pid namespace in the records.
	Host verdict.Host
	// Procs are the holders to name. Live must not be empty when Kinds
	// has a live kind, nor Gone when it has a gone one.
	Procs *Procs
	// Kinds are dealt to the locks in turn (default: Kinds).
	Kinds []Kind
	// Depth is how many levels down the leaf directories are (default 3;
	// 1 puts every entry in one directory).
	Depth int
	// Workers is how many goroutines create files (default 4).
	Workers int
}

// Counts says what was built.
type Counts struct {
	Entries int // every name below the root
	Dirs    int // directories that are not locks
	Files   int // plain files that are not locks
	Locks   int
	ByKind  map[Kind]int
	Kinds   []Kind // as dealt: lock i (job<i>.lock) is Kinds[i%len(Kinds)]
}

// Build creates the tree under root, which must exist and be empty.
func Build(root string, s Spec) (Counts, error) {
	if s.PerDir <= 0 {
		s.PerDir = 100
	}
	if s.Workers <= 0 {
		s.Workers = 4
	}
	if len(s.Kinds) == 0 {
		s.Kinds = Kinds
	}
	if s.Depth <= 0 {
		s.Depth = 3
	}
	if s.Locks > 0 {
		for _, k := range s.Kinds {
			switch {
			case needsLive(k) && (s.Procs == nil || len(s.Procs.Live) == 0):
				return Counts{}, fmt.Errorf("%s locks need live holders", k)
			case needsGone(k) && (s.Procs == nil || len(s.Procs.Gone) == 0):
				return Counts{}, fmt.Errorf("%s locks need gone holders", k)
			}
		}
	}
	c := Counts{ByKind: map[Kind]int{}, Kinds: s.Kinds}

	dirs, err := makeLeaves(root, s, &c)
	if err != nil {
		return c, err
	}

	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))
	type lockJob struct {
		dir  string
		n    int
		kind Kind
	}
	jobs := make([]lockJob, s.Locks)
	lockEntries := 0
	for i := range jobs {
		k := s.Kinds[i%len(s.Kinds)]
		jobs[i] = lockJob{dir: dirs[rng.IntN(len(dirs))], n: i, kind: k}
		lockEntries += entriesOf(k)
		c.ByKind[k]++
	}
	c.Locks = s.Locks
	c.Files = max(0, s.Entries-c.Dirs-lockEntries)
	c.Entries = c.Dirs + c.Files + lockEntries

	now := time.Now()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	for w := 0; w < s.Workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			// Plain files, dealt round-robin over the leaves.
			for i := w; i < c.Files; i += s.Workers {
				name := fileName(i)
				f, err := os.OpenFile(filepath.Join(dirs[i%len(dirs)], name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
				if err != nil {
					fail(err)
					return
				}
				f.Close()
			}
			for i := w; i < len(jobs); i += s.Workers {
				j := jobs[i]
				if err := writeLock(j.dir, j.n, j.kind, s, now); err != nil {
					fail(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return c, first
}

// makeLeaves makes the leaf directories, enough for s.PerDir entries each,
// counting them in c: s.Depth levels deep, root/aNNN/bNNN/cNNN for 3, a
// chain root/aNNN/x01/.../xMM/bNNN/cNNN shared by each aNNN's leaves for
// more, and one directory root/flat holding everything for 1.
func makeLeaves(root string, s Spec, c *Counts) ([]string, error) {
	if s.Depth == 1 {
		if err := os.Mkdir(filepath.Join(root, "flat"), 0o755); err != nil {
			return nil, err
		}
		c.Dirs++
		return []string{filepath.Join(root, "flat")}, nil
	}
	if s.Depth == 2 {
		return nil, fmt.Errorf("depth %d: want 1, or 3 or more", s.Depth)
	}
	leaves := max(1, s.Entries/s.PerDir)
	fan := max(1, int(math.Ceil(math.Cbrt(float64(leaves)))))
	dirs := make([]string, 0, leaves)
	made := map[string]bool{}
	for i := 0; i < leaves; i++ {
		a := fmt.Sprintf("a%03d", i/(fan*fan))
		path := []string{a}
		for x := 1; x <= s.Depth-3; x++ {
			path = append(path, filepath.Join(path[len(path)-1], fmt.Sprintf("x%02d", x)))
		}
		mid := path[len(path)-1]
		b := filepath.Join(mid, fmt.Sprintf("b%03d", (i/fan)%fan))
		cc := filepath.Join(b, fmt.Sprintf("c%03d", i%fan))
		for _, d := range append(path, b, cc) {
			if !made[d] {
				made[d] = true
				if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
					return nil, err
				}
				c.Dirs++
			}
		}
		dirs = append(dirs, filepath.Join(root, cc))
	}
	return dirs, nil
}

func needsLive(k Kind) bool {
	return slices.Contains([]Kind{LivePid, LiveRegistryB, LiveLockctl, LiveKeyValue, LiveFilelock, LiveUUCP}, k)
}

func needsGone(k Kind) bool {
	return slices.Contains([]Kind{GonePid, GoneRegistryA, GoneLockctl, GoneUUCP, GoneKeyValue, GoneFilelock}, k)
}

func fileName(i int) string {
	switch i % 4 {
	case 0:
		return fmt.Sprintf("src%07d.go", i)
	case 1:
		return fmt.Sprintf("obj%07d.o", i)
	case 2:
		return fmt.Sprintf("data%07d.json", i)
	}
	return fmt.Sprintf("log%07d.txt", i)
}

// entriesOf is how many names a lock of kind k adds to the tree.
func entriesOf(k Kind) int {
	switch k {
	case GoneRegistryA, GoneLockctl, LiveRegistryB, LiveLockctl:
		return 2 // the directory and one record
	}
	return 1
}

func hexOf(n int, salt string) string {
	sum := sha256.Sum256([]byte(salt + strconv.Itoa(n)))
	return hex.EncodeToString(sum[:16])
}

func writeLock(dir string, n int, k Kind, s Spec, now time.Time) error {
	p := filepath.Join(dir, fmt.Sprintf("job%05d.lock", n))
	var live Proc
	var gone int
	if s.Procs != nil && len(s.Procs.Live) > 0 {
		live = s.Procs.Live[n%len(s.Procs.Live)]
	}
	if s.Procs != nil && len(s.Procs.Gone) > 0 {
		gone = s.Procs.Gone[n%len(s.Procs.Gone)]
	}
	h := s.Host
	file := func(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }
	lockctl := func(pid int, start uint64) error {
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
		tok := fmt.Sprintf("%d.%s.1", pid, hexOf(n, "lockctl"))
		return file(filepath.Join(p, "holder"), fmt.Sprintf(
			"lockctl-lock 1\ntoken %s\npid %d\nstart %d\nboot %s\npidns %s\nhost %s\ncommand bench\nacquired %s\n",
			tok, pid, start, h.BootID, h.PidNS, h.Name, now.UTC().Format(time.RFC3339Nano)))
	}
	switch k {
	case GonePid:
		return file(p, fmt.Sprintf("%d\n", gone))
	case GoneUUCP:
		return file(p, fmt.Sprintf("%10d\n", gone))
	case GoneRegistryA:
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
		tok := fmt.Sprintf("%s.%d.%d.%s", h.Name, gone, now.Unix(), hexOf(n, "a"))
		return file(p+".holder", fmt.Sprintf("token %s\npid %d\ncommand build\nhost %s\n", tok, gone, h.Name))
	case GoneLockctl:
		// A start time no process has: the fence reads it as gone even if
		// the pid has been reused since.
		return lockctl(gone, 1)
	case LivePid:
		return file(p, fmt.Sprintf("%d\n", live.Pid))
	case LiveKeyValue:
		return file(p, fmt.Sprintf("pid=%d\nhost=%s\n", live.Pid, h.Name))
	case LiveRegistryB:
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
		tok := fmt.Sprintf("%d.%s.1", live.Pid, hexOf(n, "b"))
		rec := fmt.Sprintf("token %s\npid %d\ncommand agent\nhost %s\n", tok, live.Pid, h.Name)
		if h.Scope != "" {
			rec += "scope " + h.Scope + "\n"
		}
		return file(filepath.Join(p, "holder."+tok), rec)
	case LiveLockctl:
		return lockctl(live.Pid, live.Start)
	case OwnerlessDir:
		return os.Mkdir(p, 0o755)
	case OwnerlessZero:
		return file(p, "0\n")
	case GoneKeyValue:
		return file(p, fmt.Sprintf("pid=%d\nhost=%s\n", gone, h.Name))
	case GoneFilelock:
		return file(p, fmt.Sprintf("%d\n%s\n", gone, h.Name))
	case LiveFilelock:
		return file(p, fmt.Sprintf("%d\n%s\n", live.Pid, h.Name))
	case LiveUUCP:
		return file(p, fmt.Sprintf("%10d\n", live.Pid))
	case KernelFree:
		return file(p, scan.KernelRecord)
	case EmptyIdle:
		return file(p, "")
	}
	return fmt.Errorf("unknown kind %q", k)
}

// Expected is the verdict each kind should get, for checking a report.
// An empty file is idle only by a complete look at every process's open
// files; where some are hidden from this reader (a sandbox's pid 1), it is
// PartialLook's verdict instead.
func Expected(k Kind) verdict.Verdict {
	switch {
	case needsGone(k):
		return verdict.Gone
	case needsLive(k):
		return verdict.Live
	case k == KernelFree:
		return verdict.Free
	case k == EmptyIdle:
		return verdict.Idle
	}
	return verdict.Ownerless
}

// PartialLook is the verdict kind k gets where not every process's open
// files can be read: the same as Expected but for an empty file, which
// is then owner-less (a doubt is never idle).
func PartialLook(k Kind) verdict.Verdict {
	if k == EmptyIdle {
		return verdict.Ownerless
	}
	return Expected(k)
}

package verdict

import "github.com/lockctl/lockctl/scan"

// The git format's fixture worlds: git processes that work in the
// repository (git-working), a look at them that was not complete
// (git-partial), and none at all (git-none).
func init() {
	world("git-working", func(ev *fakeEvidence, _ *scan.Lock) {
		ev.git, ev.gitComplete = []KernelHolder{{Pid: 4321, Comm: "git", How: "works in the repository"}}, true
	})
	world("git-partial", func(ev *fakeEvidence, _ *scan.Lock) { ev.gitComplete = false })
	world("git-none", func(ev *fakeEvidence, _ *scan.Lock) { ev.gitComplete = true })
}

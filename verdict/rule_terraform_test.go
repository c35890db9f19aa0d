package verdict

import "github.com/lockctl/lockctl/scan"

// The Terraform format's fixture world: a Terraform applying, which holds
// its lock on the state file (the lock info only says who took it).
func init() {
	world("terraform-applying", func(ev *fakeEvidence, l *scan.Lock) {
		info := l.Terraform.StateInfo
		ev.held = map[[2]uint64][]KernelHolder{{info.Dev, info.Ino}: {fixtureLocker}}
	})
}

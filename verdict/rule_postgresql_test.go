package verdict

import "github.com/lockctl/lockctl/scan"

// The PostgreSQL format's fixture worlds: the cluster's shared memory
// known to have no process attached (shm-free), or not seen (shm-unseen).
func init() {
	world("shm-free", func(ev *fakeEvidence, _ *scan.Lock) { ev.shmKnow = true })
	world("shm-unseen", nil)
}

package verdict

import (
	"testing"

	"github.com/lockctl/lockctl/scan"
)

// TestJudgeHostNameOnANetworkFS: on a network file system a host name is
// not a machine's identity (a container's UTS name, "localhost", VMs
// cloned from one snapshot), so a record that gives no boot id and no
// scope is foreign whatever host it names, this reader's included; on a
// local one the same record is this kernel's and judged here (issue 28,
// review F6).
func TestJudgeHostNameOnANetworkFS(t *testing.T) {
	filelock := func(host string) *scan.Holder {
		return modified(pidHolder(holderPid), func(h *scan.Holder) { h.Host = host })
	}
	run(t, []judgeCase{
		{
			name: "registry-a-naming-this-host-on-a-network-fs-is-foreign",
			lock: remote(lockA(holderA(holderPid, here))),
			want: Foreign, reason: "names host alpha but no boot, on a network file system (nfs)",
			noProbe: true,
		},
		{
			name:  "registry-a-naming-this-host-on-a-network-fs-is-foreign-even-if-the-pid-runs",
			procs: procs(holderPid, alive),
			lock:  remote(lockA(holderA(holderPid, here))),
			want:  Foreign, reason: "a host name is not unique",
			noProbe: true,
		},
		{
			name: "registry-a-naming-this-host-differently-cased-on-a-network-fs-is-foreign",
			lock: remote(lockA(holderA(holderPid, "ALPHA"))),
			want: Foreign, reason: "names host ALPHA but no boot",
			noProbe: true,
		},
		{
			name: "host-and-pid-record-naming-this-host-on-a-network-fs-is-foreign",
			lock: remote(pidFile(scan.FormatFilelock, "4242\nalpha\n", filelock(here), nil)),
			want: Foreign, reason: "names host alpha but no boot",
			noProbe: true,
		},
		{
			name: "registry-a-naming-another-host-on-a-network-fs-stays-foreign",
			lock: remote(lockA(holderA(holderPid, "otherbox"))),
			want: Foreign, reason: "names host otherbox, and this is alpha",
			noProbe: true,
		},
		{
			name: "registry-a-naming-this-host-on-a-local-fs-is-judged-here",
			lock: lockA(holderA(holderPid, here)),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(in(regDir, lockName+".holder")), rmdir(lockPath)),
		},
		{
			name:  "lockctl-record-of-this-host-and-boot-on-a-network-fs-is-judged-here",
			procs: procs(holderPid, alive),
			lock:  remote(pidLock(modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.Host = here }))),
			want:  Live, reason: "start time matches",
		},
	})
}

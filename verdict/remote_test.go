package verdict

import (
	"errors"
	"io/fs"
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

// TestJudgeSideFilesOnANetworkFS: on a network file system a side file's
// name does not place its maker on this machine: .ns4026531836 is the
// initial pid namespace of every Linux machine. The maker is asked about
// here only when the side file's record carries this boot's id, read where
// this reader's boot id is the kernel's, and names this host; otherwise it
// is unknown, so another machine's acquire, break or release under way is
// never abandoned debris here (issue 28, review F5).
func TestJudgeSideFilesOnANetworkFS(t *testing.T) {
	const otherBoot = "99999999-1b7d-4d3e-9f0a-3c5b7e9d1f20"
	const tok = "778.0123456789abcdef0123456789abcdef.1"
	liveHolder := func() *scan.Holder {
		return modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.Host = here })
	}
	// build is a build named with this reader's pid namespace, whose
	// record was written on host at boot.
	build := func(host, boot string) scan.Claim {
		c := buildOf(pidName, tok, 778, modified(fenced(778, 1, boot), func(h *scan.Holder) { h.Host = host }))
		c.NS = hereNS
		return c
	}
	unwritten := func() scan.Claim {
		c := build(here, hereBoot)
		c.Record.Holder, c.Record.Raw, c.Record.Err = nil, nil, fs.ErrNotExist
		return c
	}
	withBuild := func(c scan.Claim) *scan.Lock {
		return remote(with(pidLock(liveHolder()), func(l *scan.Lock) { l.Claims = []scan.Claim{c} }))
	}
	buildSteps := steps(rm(in(runDir, pidName+".new."+tok+".778/holder")), rmdir(in(runDir, pidName+".new."+tok+".778")))
	breakOf := func(h *scan.Holder) *scan.Lock {
		c := claim(scan.ClaimBreak, breakAName(breaker), breaker, rawA(h), h)
		c.Maker, c.NS = true, hereNS
		return remote(emptyDir(c))
	}
	run(t, []judgeCase{
		{
			name:   "build-of-another-machine-named-with-this-namespace-is-kept",
			procs:  procs(holderPid, alive),
			lock:   withBuild(build("otherbox", otherBoot)),
			want:   Live,
			debris: []Step{},
		},
		{
			name:   "build-of-another-boot-named-with-this-namespace-is-kept",
			procs:  procs(holderPid, alive),
			lock:   withBuild(build(here, otherBoot)),
			want:   Live,
			debris: []Step{},
		},
		{
			name:   "build-of-this-boot-by-another-host-name-is-kept",
			procs:  procs(holderPid, alive),
			lock:   withBuild(build("otherbox", hereBoot)),
			want:   Live,
			debris: []Step{},
		},
		{
			name:   "build-of-this-boot-read-with-a-boot-id-that-is-only-a-file-is-kept",
			host:   func(h *Host) { h.BootIDErr = errors.New("not on procfs") },
			procs:  procs(holderPid, alive),
			lock:   withBuild(build(here, hereBoot)),
			want:   Live,
			debris: []Step{},
		},
		{
			name:   "build-with-no-record-is-kept",
			procs:  procs(holderPid, alive),
			lock:   withBuild(unwritten()),
			want:   Live,
			debris: []Step{},
		},
		{
			name:   "build-of-this-host-and-boot-of-a-gone-maker-is-debris",
			procs:  procs(holderPid, alive),
			lock:   withBuild(build(here, hereBoot)),
			want:   Live,
			debris: buildSteps,
		},
		{
			name: "only-builds-of-another-machine-are-acquirers-waiting",
			lock: remote(orphan(scan.FormatLockctl, build("otherbox", otherBoot))),
			want: Claimed, reason: "1 by acquirers still running, 0 abandoned",
		},
		{
			name: "break-named-with-this-namespace-holding-another-machines-record-is-under-way",
			lock: breakOf(holderA(holderPid, "otherbox")),
			want: Claimed, reason: "is under way or its maker cannot be checked",
		},
		{
			name: "writer-of-no-stated-namespace-on-a-network-fs-is-unknown",
			lock: remote(with(dirLock(scan.FormatRegistryB), func(l *scan.Lock) {
				l.Writers = []scan.Writer{writer(holderB(holderPid, ""), otherPid)}
			})),
			want: Unknown, reason: "cannot tell whether writer pid 4343 is running: it is named on a network file system",
		},
	})
}

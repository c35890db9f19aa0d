package verdict

import (
	"errors"
	"testing"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
)

// otherNS is a pid namespace other than the test host's.
const otherNS = "pid:[4026532999]"

// childView is what a probe in a child pid namespace says of the others.
var childView = errors.New("this lockctl runs in a child pid namespace (pid:[4026532888]), which cannot see the processes of the host or of other containers: judge it from the host")

// inContainer is a process of another pid namespace that has, there, the
// pid the records name.
var inContainer = map[int][]Namesake{holderPid: {{Pid: 31000, Inner: holderPid, Comm: "sleep", NS: otherNS}}}

func remote(l *scan.Lock) *scan.Lock {
	l.FS = fsx.FS{Name: "nfs", Remote: true}
	return l
}

// TestJudgeReadersView: "no such pid" means gone only where the reader
// provably sees the holder's pid space (docs/verdicts.md, "Containers and
// partial views").
func TestJudgeReadersView(t *testing.T) {
	a := holderA(holderPid, here)
	ownNS := fenced(holderPid, alive.Start, hereBoot)
	run(t, []judgeCase{
		// A pid that names no namespace.
		{
			name: "bare-pid-absent-seen-everywhere-is-gone",
			lock: pidLock(pidHolder(holderPid)),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(pidPath)),
		},
		{
			name: "bare-pid-absent-from-a-child-namespace",
			view: childView,
			lock: pidLock(pidHolder(holderPid)),
			want: Unknown, reason: "does not say which pid namespace wrote it, and this lockctl runs in a child pid namespace",
		},
		{
			name:      "bare-pid-absent-but-a-containers-pid",
			namesakes: inContainer,
			lock:      pidLock(pidHolder(holderPid)),
			want:      Unknown, reason: "pid 31000 (sleep) is pid 4242 in pid namespace pid:[4026532999]",
		},
		// A start-fenced pid that names no namespace (filelock's
		// SoftFileLock): another start time here proves nothing while a
		// container's process has that pid.
		{
			name:      "fenced-pid-of-no-namespace-another-process-here-but-a-containers-pid",
			procs:     procs(holderPid, alive),
			namesakes: inContainer,
			lock:      pidLock(modified(fenced(holderPid, alive.Start+7, hereBoot), func(h *scan.Holder) { h.PidNS, h.RawStart = "", true })),
			want:      Unknown, reason: "is another process here (start time",
		},
		{
			name:  "fenced-pid-of-no-namespace-another-process-here-seen-everywhere-is-gone",
			procs: procs(holderPid, alive),
			lock:  pidLock(modified(fenced(holderPid, alive.Start+7, hereBoot), func(h *scan.Holder) { h.PidNS, h.RawStart = "", true })),
			want:  Gone, reason: "not the recorded",
			remove: steps(rm(pidPath)),
		},
		{
			name:      "bare-pid-zombie-but-a-containers-pid",
			procs:     procs(holderPid, Proc{State: StateZombie, Comm: "sh"}),
			namesakes: inContainer,
			lock:      pidLock(pidHolder(holderPid)),
			want:      Unknown, reason: "is a zombie (sh) in this pid namespace",
		},
		{
			name:      "bare-pid-live-here-is-live-whatever-a-container-has",
			procs:     procs(holderPid, alive),
			namesakes: inContainer,
			lock:      pidLock(pidHolder(holderPid)),
			want:      Live, reason: "is running",
		},
		{
			name: "registry-a-absent-from-a-child-namespace",
			view: childView,
			lock: lockA(a),
			want: Unknown, reason: "child pid namespace",
		},
		{
			name:      "registry-a-absent-but-a-containers-pid",
			namesakes: inContainer,
			lock:      lockA(a),
			want:      Unknown, reason: "pid 31000 (sleep)",
		},
		{
			name: "registry-b-with-this-scope-needs-no-wider-view",
			view: childView,
			lock: lockB(holderB(holderPid, hereScope)),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(in(regDir, lockName+"/holder."+holderB(holderPid, hereScope).Token)), rmdir(lockPath)),
		},
		// A pid of this namespace needs no wider view.
		{
			name: "lockctl-record-of-this-namespace-from-a-child-namespace",
			view: childView,
			lock: pidLock(ownNS),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(pidPath)),
		},
		// A pid of another namespace.
		{
			name:       "other-namespace-in-use-is-foreign",
			namespaces: map[string]bool{otherNS: true},
			lock:       pidLock(modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.PidNS = otherNS })),
			want:       Foreign, reason: "judge it inside that namespace",
			noProbe: true,
		},
		{
			name: "other-namespace-ended-is-gone",
			lock: pidLock(modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.PidNS = otherNS })),
			want: Gone, reason: "that namespace has ended",
			remove:  steps(rm(pidPath)),
			noProbe: true,
		},
		{
			name: "other-namespace-unseen-is-foreign",
			view: childView,
			lock: pidLock(modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.PidNS = otherNS })),
			want: Foreign, reason: "whether it has ended cannot be told here: this lockctl runs in a child pid namespace",
			noProbe: true,
		},
		// A reader whose own pid namespace cannot be read (a foreign
		// /proc) says so, never "and this is :" (issue 41, item 7).
		{
			name:       "own-namespace-unread-is-named-so",
			host:       func(h *Host) { h.PidNS = "" },
			namespaces: map[string]bool{otherNS: true},
			lock:       pidLock(modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.PidNS = otherNS })),
			want:       Foreign, reason: "and this reader's own cannot be read: judge it inside that namespace",
			noProbe: true,
		},
		{
			name: "other-namespace-ended-on-a-network-fs-is-foreign",
			lock: remote(pidLock(modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.PidNS, h.Host = otherNS, here }))),
			want: Foreign, reason: "judge it inside that namespace",
			noProbe: true,
		},
		// Host identity.
		{
			name: "renamed-host-this-boot-on-a-local-fs-is-judged",
			lock: pidLock(modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.Host = "renamed" })),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(pidPath)),
		},
		{
			name:  "renamed-host-this-boot-live",
			procs: procs(holderPid, alive),
			lock:  pidLock(modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.Host = "renamed" })),
			want:  Live, reason: "start time matches",
		},
		{
			name: "renamed-host-this-boot-on-a-network-fs-is-foreign",
			lock: remote(pidLock(modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.Host = "renamed" }))),
			want: Foreign, reason: "names host renamed",
			noProbe: true,
		},
		{
			name: "other-host-other-boot-is-foreign",
			lock: pidLock(modified(fenced(holderPid, alive.Start, "another-boot"), func(h *scan.Holder) { h.Host = "renamed" })),
			want: Foreign, reason: "names host renamed",
			noProbe: true,
		},
		{
			name: "hostname-only-format-keeps-the-name-check",
			lock: lockA(holderA(holderPid, "renamed")),
			want: Foreign, reason: "names host renamed",
			noProbe: true,
		},
	})
}

// TestJudgeSideFilesInTheirMakersNamespace: a side file's maker is judged
// in the pid namespace its name or record gives, never by its number here.
func TestJudgeSideFilesInTheirMakersNamespace(t *testing.T) {
	a := holderA(holderPid, here)
	liveHolder := modified(fenced(holderPid, alive.Start, hereBoot), func(h *scan.Holder) { h.Host = here })
	build := func(ns string) scan.Claim {
		c := buildOf(pidName, "778.0123456789abcdef0123456789abcdef.1", 778, fenced(778, 1, hereBoot))
		c.NS = ns
		return c
	}
	buildSteps := steps(rm(in(runDir, pidName+".new.778.0123456789abcdef0123456789abcdef.1.778/holder")), rmdir(in(runDir, pidName+".new.778.0123456789abcdef0123456789abcdef.1.778")))
	withBuild := func(ns string) *scan.Lock {
		return with(pidLock(liveHolder), func(l *scan.Lock) { l.Claims = []scan.Claim{build(ns)} })
	}
	breakIn := func(ns string, h *scan.Holder) scan.Claim {
		c := breakA(breaker, h)
		c.Maker, c.NS = true, ns
		return c
	}
	run(t, []judgeCase{
		{
			name:   "build-of-a-gone-maker-here-is-debris",
			procs:  procs(holderPid, alive),
			lock:   withBuild(hereNS),
			want:   Live,
			debris: buildSteps,
		},
		{
			name:       "build-of-a-maker-in-a-live-namespace-is-kept",
			procs:      procs(holderPid, alive),
			namespaces: map[string]bool{otherNS: true},
			lock:       withBuild(otherNS),
			want:       Live,
			debris:     []Step{},
		},
		{
			name:   "build-of-a-maker-in-an-ended-namespace-is-debris",
			procs:  procs(holderPid, alive),
			lock:   withBuild(otherNS),
			want:   Live,
			debris: buildSteps,
		},
		{
			name:   "build-of-an-unnamed-namespace-seen-from-a-child-is-kept",
			procs:  procs(holderPid, alive),
			view:   childView,
			lock:   withBuild(""),
			want:   Live,
			debris: []Step{},
		},
		{
			name:   "build-of-an-ended-namespace-on-a-network-fs-is-kept",
			procs:  procs(holderPid, alive),
			lock:   remote(withBuild(otherNS)),
			want:   Live,
			debris: []Step{},
		},
		{
			name: "break-of-a-gone-breaker-here-is-finished",
			lock: emptyDir(breakIn(hereNS, a)),
			want: Claimed, reason: "by pid 777 (not running) was abandoned",
			remove: steps(rmdir(lockPath), rm(in(regDir, breakAName(breaker)))),
		},
		{
			name:       "break-by-a-breaker-in-another-live-namespace-is-kept",
			namespaces: map[string]bool{otherNS: true},
			lock:       emptyDir(breakIn(otherNS, a)),
			want:       Claimed, reason: "by pid 777 (state unknown) is under way or its maker cannot be checked",
		},
		{
			name: "break-by-a-breaker-in-an-ended-namespace-is-finished",
			lock: emptyDir(breakIn(otherNS, a)),
			want: Claimed, reason: "was abandoned",
			remove: steps(rmdir(lockPath), rm(in(regDir, breakAName(breaker)))),
		},
		{
			name: "break-of-no-stated-namespace-from-a-child-is-kept",
			view: childView,
			lock: emptyDir(breakIn("", a)),
			want: Claimed, reason: "is under way or its maker cannot be checked",
		},
		{
			name:      "break-of-no-stated-namespace-whose-pid-a-container-has-is-kept",
			namesakes: map[int][]Namesake{breaker: {{Pid: 31001, Inner: breaker, Comm: "lockctl", NS: otherNS}}},
			lock:      emptyDir(breakIn("", a)),
			want:      Claimed, reason: "is under way or its maker cannot be checked",
		},
		{
			name: "writer-of-a-scoped-record-needs-no-wider-view",
			view: childView,
			lock: with(dirLock(scan.FormatRegistryB), func(l *scan.Lock) {
				b := holderB(holderPid, hereScope)
				l.Holders = []scan.Record{recB(b)}
				l.Writers = []scan.Writer{writer(b, otherPid)}
			}),
			want: Gone, reason: "pid 4242 is not running",
			remove: steps(rm(in(regDir, lockName+"/holder."+holderB(holderPid, hereScope).Token)),
				rm(in(lockPath, writer(holderB(holderPid, hereScope), otherPid).Name)), rmdir(lockPath)),
		},
	})
}

package judges

import (
	"testing"

	"github.com/lockctl/lockctl/internal/kernel"
	"github.com/lockctl/lockctl/verdict"
)

// freshness says how a judge asks the kernel: whether its probe caches,
// whether its evidence is looked at afresh on every question (and is only
// the lock table), and whether it may take a file's flock for an instant.
type freshness struct {
	cachedProbe, evidence, fresh, locksOnly, take bool
}

func freshnessOf(t *testing.T, j *verdict.Judge) freshness {
	t.Helper()
	var f freshness
	switch p := j.Probe.(type) {
	case *verdict.CachingProbe:
		f.cachedProbe = true
		if _, ok := p.Next.(kernel.KernelProbe); !ok {
			t.Errorf("the caching probe asks %T, want kernel.KernelProbe", p.Next)
		}
	case kernel.KernelProbe:
	default:
		t.Errorf("Probe = %T, want the kernel's", j.Probe)
	}
	ev := j.Evidence
	if lo, ok := ev.(verdict.LocksOnly); ok {
		f.locksOnly, ev = true, lo.Evidence
	}
	switch e := ev.(type) {
	case nil:
	case *kernel.KernelEvidence:
		f.evidence, f.fresh = true, e.Fresh
	default:
		t.Errorf("Evidence = %T, want the kernel's", j.Evidence)
	}
	switch fl := j.FileLocks.(type) {
	case nil:
	case kernel.FileLocks:
		f.take = fl.Take
	default:
		t.Errorf("FileLocks = %T, want the kernel's", j.FileLocks)
	}
	return f
}

// TestSweepAndAcquireAskAfresh pins each judge's cache and freshness
// settings, the reasons for which are given beside each constructor. Above
// all: the judgement again after a claim (Sweep) and every acquire try
// (Acquire) cache nothing and look at the kernel's evidence afresh.
func TestSweepAndAcquireAskAfresh(t *testing.T) {
	host := verdict.Host{BootID: "b", PidNS: "pid:[1]", Name: "h"}
	for _, tt := range []struct {
		name string
		j    *verdict.Judge
		want freshness
	}{
		{"Doctor", Doctor(host, false), freshness{cachedProbe: true, evidence: true}},
		{"Doctor --fix", Doctor(host, true), freshness{cachedProbe: true, evidence: true, take: true}},
		{"Sweep", Sweep(host), freshness{evidence: true, fresh: true, take: true}},
		{"Acquire", Acquire(host), freshness{evidence: true, fresh: true, locksOnly: true, take: true}},
		{"Kernel.AcquireJudge", Kernel{}.AcquireJudge(host), freshness{evidence: true, fresh: true, locksOnly: true, take: true}},
		{"Release", Release(host), freshness{}},
		{"Kernel.ReleaseJudge", Kernel{}.ReleaseJudge(host), freshness{}},
		{"Reserve", Reserve(host), freshness{}},
		{"Kernel.ReserveJudge", Kernel{}.ReserveJudge(host), freshness{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := freshnessOf(t, tt.j); got != tt.want {
				t.Errorf("%s's judge asks the kernel %+v, want %+v", tt.name, got, tt.want)
			}
			if h := tt.j.Host; h.BootID != host.BootID || h.PidNS != host.PidNS || h.Name != host.Name {
				t.Errorf("%s's judge judges for %+v, want %+v", tt.name, tt.j.Host, host)
			}
		})
	}
	// Each call makes a judge of its own: no cache is shared between two
	// acquires, two fixers or two doctor runs.
	if Sweep(host).Evidence == Sweep(host).Evidence || Acquire(host).Evidence == Acquire(host).Evidence || Doctor(host, false).Probe == Doctor(host, false).Probe {
		t.Error("two calls share a judge's evidence or probe, want one each")
	}
}

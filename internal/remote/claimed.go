package remote

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/report"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// identity is who a host said it was in its first answer of a run.
type identity struct{ machineID, bootID string }

// remember keeps host's identity from its first answer, which its answer
// about a claimed record must repeat.
func (v *Via) remember(host string, a *Answer) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ids == nil {
		v.ids = map[string]identity{}
	}
	v.ids[strings.ToLower(host)] = identity{a.MachineID, a.BootID}
}

// sameHost refuses an answer whose machine or boot id is not that of
// host's first answer: another machine, or the same one booted since.
func (v *Via) sameHost(host string, a *Answer) error {
	v.mu.Lock()
	id, ok := v.ids[strings.ToLower(host)]
	v.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("%w: host %s judged none of this run's locks before", errAnswer, host)
	case a.MachineID != id.machineID:
		return fmt.Errorf("%w: its machine id %q is not the %q of its first answer", errAnswer, a.MachineID, id.machineID)
	case a.BootID != id.bootID:
		return fmt.Errorf("%w: its boot id %q is not the %q of its first answer (the host booted since?)", errAnswer, a.BootID, id.bootID)
	}
	return nil
}

// Rejudge asks host again, for doctor --fix --via, about the lock l
// judged gone there and now claimed here: the claimed record rec, whose
// claim is the path claim beside the lock. It is a fix.Rejudge. It answers
// host's verdict only when the answer comes from host (the checks of a
// first answer, the same machine and boot id as that answer, the claim
// sent); anything else, and any failure to ask, is unknown, which keeps
// the lock.
func (v *Via) Rejudge(host string, l *scan.Lock, rec scan.Record, claim string) verdict.Result {
	req := Request{Version: Version, Records: []Record{{Path: l.Path, Format: string(l.Format), Bytes: string(rec.Raw), Claim: claim}}}
	var a *Answer
	err := fmt.Errorf("%w: the host %q is not a host name", errAnswer, host)
	if ValidHost(host) {
		a, err = v.call(host, &req)
	}
	if err == nil {
		err = check(a, host, req.Records)
	}
	if err == nil {
		err = v.sameHost(host, a)
	}
	if err == nil && a.Judged[0].Claim != claim {
		err = fmt.Errorf("%w: it judges the claim %q where %q was sent", errAnswer, a.Judged[0].Claim, claim)
	}
	if err != nil {
		return verdict.Result{Lock: l, Verdict: verdict.Unknown, Remote: host,
			Reason: fmt.Sprintf("host %s, asked about the claimed record: %s", host, report.Clean(err.Error()))}
	}
	j := a.Judged[0]
	return verdict.Result{Lock: l, Verdict: verdict.Verdict(j.Verdict), Remote: host,
		Reason: fmt.Sprintf("on host %s: %s", host, report.Clean(j.Reason))}
}

// judgeClaimed judges a claimed record (the far end of Rejudge): the file
// at rec.Claim, which must be a claim beside the lock at rec.Path (in its
// directory, named as lockctl names claims, <lock>.dead.<...>) holding the
// bytes sent, read as a lock file of the format sent and judged as the
// record of the lock at rec.Path, by the rules Judge judges a lock by. It
// reads only.
func judgeClaimed(rec Record, judge *verdict.Judge) Judgment {
	out := Judgment{Path: rec.Path, Claim: rec.Claim, Verdict: string(verdict.Unknown)}
	if why := besideLock(rec.Path, rec.Claim); why != "" {
		out.Reason = why
		return out
	}
	cl, err := scan.ReadOne(filepath.Dir(rec.Claim), filepath.Base(rec.Claim))
	switch {
	case err != nil:
		out.Reason = fmt.Sprintf("this host cannot read the claim (%v)", err)
		return out
	case cl == nil || len(cl.Holders) != 1 || cl.Holders[0].Holder == nil:
		out.Reason = "there is no claimed record at the claim's path on this host"
		return out
	case cl.Kind != scan.KindFile:
		out.Reason = fmt.Sprintf("the claim is a %s, not a lock file", cl.Kind)
		return out
	case string(cl.Holders[0].Raw) != rec.Bytes:
		out.Reason = "the claimed record on this host is not the one sent: it changed since, or this is another file"
		return out
	case string(cl.Format) != rec.Format:
		out.Reason = fmt.Sprintf("the claimed record reads here as %s, not %s", cl.Format, rec.Format)
		return out
	}
	// The claimed record, judged as the lock's own (fix's step 3: the lock
	// with this one record, and no claims).
	again := *cl
	again.Path, again.Name = rec.Path, filepath.Base(rec.Path)
	again.Holders = []scan.Record{cl.Holders[0]}
	again.Claims = nil
	r := judge.Judge(&again)
	out.Verdict, out.Reason, out.Notes = string(r.Verdict), r.Reason, r.Notes
	return out
}

// besideLock says why claim is not a claim of the lock at path, or "".
func besideLock(path, claim string) string {
	clean := func(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0) }
	prefix := filepath.Base(path) + ".dead."
	switch {
	case !clean(path) || !clean(claim):
		return "the path or the claim sent is not a clean absolute path"
	case filepath.Dir(claim) != filepath.Dir(path):
		return "the claim sent is not in the lock's directory"
	case !strings.HasPrefix(filepath.Base(claim), prefix) || len(filepath.Base(claim)) == len(prefix):
		return "the claim sent is not named as a claim of the lock (<lock>.dead.<...>)"
	}
	return ""
}

package remote

import (
	"fmt"
	"path/filepath"

	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// Judge judges each record of req on this host, by judge (doctor's
// rules, taking nothing: judges.Doctor with fixing false), and answers as
// host. It reads the lock at each record's path: a lock's kernel locks
// and its holders' open files can be asked only of the lock itself, so a
// record this host cannot read, or whose bytes here are not those sent, is
// judged unknown. It never writes, removes or takes anything.
func Judge(req *Request, host verdict.Host, judge *verdict.Judge) *Answer {
	a := &Answer{Version: Version, Host: host.Name, MachineID: host.MachineID, BootID: host.BootID}
	for _, rec := range req.Records {
		a.Judged = append(a.Judged, judgeOne(rec, judge))
	}
	return a
}

func judgeOne(rec Record, judge *verdict.Judge) Judgment {
	if rec.Claim != "" {
		return judgeClaimed(rec, judge)
	}
	out := Judgment{Path: rec.Path, Verdict: string(verdict.Unknown)}
	if !filepath.IsAbs(rec.Path) || filepath.Clean(rec.Path) != rec.Path {
		out.Reason = "the path sent is not a clean absolute path"
		return out
	}
	l, err := scan.ReadOne(filepath.Dir(rec.Path), filepath.Base(rec.Path))
	switch {
	case err != nil:
		out.Reason = fmt.Sprintf("this host cannot read the lock (%v): its kernel locks and holders can be asked only of the lock itself", err)
		return out
	case l == nil || len(l.Holders) == 0:
		out.Reason = "there is no lock record at this path on this host"
		return out
	case string(l.Holders[0].Raw) != rec.Bytes:
		out.Reason = "the record at this path on this host is not the one sent: it changed since, or this is another file"
		return out
	}
	r := judge.Judge(l)
	out.Verdict, out.Reason, out.Notes = string(r.Verdict), r.Reason, r.Notes
	return out
}

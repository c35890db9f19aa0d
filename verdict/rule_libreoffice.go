package verdict

import (
	"cmp"
	"fmt"

	"github.com/lockctl/lockctl/scan"
)

// The libreoffice format's judgement (its unit: scan/format_libreoffice.go): its producer's
// rule where it needs the kernel's evidence.
func init() { rule("libreoffice", producerRule{lock: (*Judge).libreOfficeRule}) }

// libreOfficeRule judges a LibreOffice document lock, which records no
// pid: another host's (LOCALHOST compared byte for byte, as sfx2's
// docfile.cxx does) is foreign; this host's is owner-less, with no
// remedy: LibreOffice itself takes it over silently only when run by the
// same system user with the same profile ("this is own lock from the same
// installation, it could remain because of crash"), which only one
// LibreOffice at a time runs, and asks the user otherwise.
func (j *Judge) libreOfficeRule(r Result) (Result, bool) {
	lo := r.Lock.LibreOffice
	if r.Lock.Kind != scan.KindFile || lo == nil || len(r.Lock.Holders) != 1 || r.Lock.Holders[0].Holder == nil {
		return r, false
	}
	h := r.Lock.Holders[0].Holder
	if j.Host.Name == "" || h.Host != j.Host.Name {
		return r.set(judged{v: Foreign, holder: h, reason: fmt.Sprintf("LibreOffice recorded user %s on host %s, and this is %s: LibreOffice there may have the document open (it records no pid)", h.User, h.Host, cmp.Or(j.Host.Name, "a host whose name cannot be read"))}), true
	}
	r = r.set(judged{v: Ownerless, holder: h, reason: fmt.Sprintf("LibreOffice recorded user %s on this host, with the profile %s, at %s, and no pid: whether a LibreOffice still has the document open cannot be told from the lock", h.User, lo.Profile, lo.Time)})
	r.Notes = append(r.Notes, fmt.Sprintf("LibreOffice run by %s with that profile takes this lock over by itself (a lock left by a crash); anyone else is asked", h.User))
	r.Notes = append(r.Notes, scan.LibreOfficeInPlace)
	return r, true
}

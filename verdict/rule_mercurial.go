package verdict

import (
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/scan"
)

// The mercurial format's judgement (its unit: scan/format_mercurial.go): its producer's
// rule where it needs the kernel's evidence.
func init() { rule("mercurial", producerRule{holder: mercurialNamespace}) }

// mercurialNamespace: Mercurial takes a lock recorded in another pid
// namespace for held (mercurial/lock.py compares the whole
// "<host>/<namespace>" prefix), whether or not that namespace has ended.
func mercurialNamespace(j *Judge, h *scan.Holder) (judged, bool) {
	if h.PidNS != "" && h.PidNS != j.Host.PidNS && strings.EqualFold(h.Host, j.Host.Name) {
		return judged{v: Foreign, holder: h, reason: fmt.Sprintf("Mercurial recorded pid %s in pid namespace %s, not this one (%s): hg itself takes such a lock as held; judge it inside that container", h.PidText, h.PidNS, j.Host.PidNS)}, true
	}
	return judged{}, false
}

package verdict

import (
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/scan"
)

// The gnupg format's judgement (its unit: scan/format_gnupg.go): its producer's
// rule where it needs the kernel's evidence.
func init() { rule("gnupg", producerRule{holder: gnupgNode}) }

// gnupgNode: gpg takes a dotlock for its own node's only when the node
// name in it is byte for byte its own uname(2) node name (common/dotlock.c,
// read_lockfile: memcmp, then the newline); of any other, however alike,
// it never removes it, and waits. lockctl, which compares host names
// without regard to case, is held to that: a name that differs only in
// case is foreign.
func gnupgNode(j *Judge, h *scan.Holder) (judged, bool) {
	if h.Host != j.Host.Name && strings.EqualFold(h.Host, j.Host.Name) {
		return judged{v: Foreign, holder: h, reason: fmt.Sprintf("GnuPG recorded node %s, and this is %s: gpg compares node names byte for byte and takes such a lock as another node's, held", h.Host, j.Host.Name)}, true
	}
	return judged{}, false
}

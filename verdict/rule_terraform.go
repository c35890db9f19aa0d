package verdict

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"

	"github.com/lockctl/lockctl/scan"
)

// The terraform format's judgement (its unit: scan/format_terraform.go): its producer's
// rule where it needs the kernel's evidence.
func init() { rule("terraform", producerRule{lock: (*Judge).terraformRule}) }

// terraformRule judges a Terraform lock info file by the lock it
// describes: Terraform's local backend holds an fcntl write lock on the
// whole state file (statemgr/filesystem_lock_unix.go), and the info file
// only says who took it. Held while the kernel lists a lock on the state
// file; free when the whole lock table lists none, or there is no state
// file to hold one on (a later Terraform takes the lock and overwrites the
// info); unknown when the table may not show it. Never removed.
func (j *Judge) terraformRule(r Result) (Result, bool) {
	tf := r.Lock.Terraform
	if r.Lock.Kind != scan.KindFile || tf == nil {
		return r, false
	}
	var h *scan.Holder
	if len(r.Lock.Holders) == 1 {
		h = r.Lock.Holders[0].Holder
	}
	what := fmt.Sprintf("Terraform's lock info for the state file %s (taken by %s for %s)", quoteName(tf.State), cmp.Or(tf.Who, "someone"), cmp.Or(tf.Operation, "an operation"))
	switch {
	case errors.Is(tf.StateErr, fs.ErrNotExist):
		return r.set(judged{v: Free, holder: h, reason: what + ": there is no state file, so no lock on it is held; the next Terraform takes the lock and writes the info again"}), true
	case tf.StateErr != nil:
		return r.set(judged{v: Unknown, holder: h, reason: fmt.Sprintf("%s: the state file cannot be looked at (%v)", what, tf.StateErr)}), true
	}
	if _, ok := j.Evidence.(LockTable); !ok {
		return r.set(judged{v: Unknown, holder: h, reason: what + ": Terraform holds it by an fcntl lock on the state file, and the kernel's lock table was not read"}), true
	}
	a := j.advisoryOn(r.Lock.Dir, tf.State, tf.StateInfo)
	switch {
	case len(a.holders) > 0:
		r = r.set(judged{v: Live, holder: h, reason: what + ": the state file is locked: " + a.text})
		r.Kernel = a.holders
		return r, true
	case !a.none:
		return r.set(judged{v: Unknown, holder: h, reason: what + ": no lock on the state file is listed, but " + a.doubt}), true
	}
	return r.set(judged{v: Free, holder: h, reason: what + ": no process holds a lock on the state file, so it is free (Terraform that was killed leaves the info; the next one overwrites it)"}), true
}

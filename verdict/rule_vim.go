package verdict

import (
	"fmt"
)

// The vim format's judgement (its unit: scan/format_vim.go): its producer's
// rule where it needs the kernel's evidence.
func init() { rule("vim", producerRule{gone: vimUnsaved}) }

// vimUnsaved: a gone vim's swap that holds unsaved changes is the one copy
// of someone's work: never removed.
func vimUnsaved(_ *Judge, r Result) Result {
	if v := r.Lock.Vim; v != nil && v.Dirty {
		r.Remove = nil
		r.Notes = append(r.Notes, fmt.Sprintf("it holds changes to %s that were never saved: recover them with 'vim -r %s', then delete the swap file; lockctl never removes it", quoteName(v.File), v.File))
	}
	return r
}

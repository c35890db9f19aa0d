package lock

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/scan"
)

// Slots (issue 20): a counting lock, up to N holders of one key. Slot 1 is
// the lock itself; slot i is <stem>.slot<i><ext> beside it, each an
// ordinary lock, taken, judged and broken like any, and each record says
// how many slots there are. docs/record-format.md, "Slots".

// MaxSlots bounds --slots: each try of a counting lock looks at every slot.
const MaxSlots = 64

// SlotPaths returns the paths of the n slots of the lock at path. The lock's
// name must end in .lock or .lck, so that doctor finds every slot by its
// default names.
func SlotPaths(path string, n int) ([]string, error) {
	if n < 1 || n > MaxSlots {
		return nil, &BadPathError{Path: path, Why: fmt.Sprintf("cannot have %d slots: give 1 to %d", n, MaxSlots)}
	}
	dir, name := filepath.Split(path)
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if ext != ".lock" && ext != ".lck" || stem == "" {
		return nil, &BadPathError{Path: path, Why: "cannot have slots: a counting lock's name ends in .lock or .lck (its slots are <name>.slot2.lock and so on, which doctor finds by those names)"}
	}
	if _, i := scan.SlotOf(name); i > 1 {
		return nil, &BadPathError{Path: path, Why: "names a slot of a counting lock: name the lock itself (slot 1)"}
	}
	paths := []string{path}
	for i := 2; i <= n; i++ {
		paths = append(paths, filepath.Join(dir, scan.SlotName(name, i)))
	}
	return paths, nil
}

// FindSlot returns the slot of the counting lock at path (n slots) whose
// record holds matches: how a release or an adoption, which names a holder
// or a token and not a slot, finds its own. A lock with one slot is path
// itself.
func FindSlot(path string, n int, holds func(h *scan.Holder) bool) (string, error) {
	if n <= 1 {
		return path, nil
	}
	paths, err := SlotPaths(path, n)
	if err != nil {
		return "", err
	}
	for _, p := range paths {
		cur, err := scan.ReadOne(filepath.Dir(p), filepath.Base(p))
		if err != nil || cur == nil || len(cur.Holders) != 1 || cur.Holders[0].Holder == nil {
			continue
		}
		if holds(cur.Holders[0].Holder) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no slot of %s (%d slots) holds it: 'lockctl doctor %s' shows who holds each", path, n, filepath.Dir(path))
}

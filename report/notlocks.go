package report

import (
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/lockctl/lockctl/scan"
)

// NotLock is a data file named like a lock (a dependency manifest such as
// Cargo.lock) as the report lists it: never with a verdict or a remedy.
// It is the JSON "not_locks" entry (docs/verdicts.md).
type NotLock struct {
	Path string `json:"path"`
	// PathShell is the path quoted for a shell, byte-exact, present only
	// when Path is not valid UTF-8 (as a lock's "path_shell").
	PathShell string `json:"path_shell,omitempty"`
	// Format is the data format's name ("cargo-lockfile"); What says what the file
	// is, for a person: "Cargo's dependency pins (Cargo.lock)".
	Format string `json:"format"`
	What   string `json:"what"`
}

// NotLocks lists ns for the report, sorted by path.
func NotLocks(ns []*scan.NotLock) []NotLock {
	out := make([]NotLock, 0, len(ns))
	for _, n := range ns {
		j := NotLock{Path: n.Path, Format: n.Format, What: n.What}
		if !utf8.ValidString(n.Path) {
			j.PathShell = ShellQuote(n.Path)
		}
		out = append(out, j)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// notLocksClause says, in a clause for the summary line, how many files
// named like locks are data, or "" when none are.
func notLocksClause(n int) string {
	if n == 0 {
		return ""
	}
	if n == 1 {
		return "1 file named like a lock is data, not a lock (left alone; --json lists it under not_locks)"
	}
	return fmt.Sprintf("%d files named like locks are data, not locks (left alone; --json lists them under not_locks)", n)
}

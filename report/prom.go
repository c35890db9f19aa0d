package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/verdict"
)

// WritePrometheus writes the report in the Prometheus text exposition format
// (version 0.0.4), for node_exporter's textfile collector. took is how long
// the run took; it becomes lockctl_scan_duration_seconds.
//
// Every metric is a gauge with HELP and TYPE lines, and no sample carries a
// timestamp (the textfile collector refuses them):
//
//   - lockctl_locks{verdict} counts the locks of each verdict, every verdict
//     present, zeros included: the same numbers as the JSON "counts".
//   - lockctl_lock_age_seconds{path,verdict} is, for every lock that is not
//     live, its age as the JSON "age_seconds" gives it, or NaN when the lock
//     has no modification time.
//   - lockctl_not_locks counts the data files named like locks (dependency
//     manifests: the JSON "not_locks"), apart from every verdict.
//   - lockctl_fix_actions{action}, after --fix only, counts the outcomes.
//   - lockctl_scan_errors, lockctl_scan_duration_seconds and
//     lockctl_scan_timestamp_seconds describe the run.
//
// Label values are escaped as the format requires (backslash, double quote,
// line feed). A label value must also be valid UTF-8, which a path need not
// be: path then carries the path with each invalid byte replaced by U+FFFD,
// exactly as the JSON "path" does, and a further label path_shell carries it
// byte-exact, quoted for a shell, as the JSON "path_shell" does. Two locks
// therefore never share a label set, which would make the collector reject
// the whole file.
//
// WritePrometheus only reads r. The output is built in memory and written
// with one Write; an error is the writer's, and w may then hold a part.
// Write to a file through an atomic rename (doctor --output) so that a
// reader never sees that part.
func WritePrometheus(w io.Writer, r *Report, took time.Duration) error {
	var b strings.Builder
	family := func(name, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	}

	family("lockctl_locks", "Locks found by the last lockctl doctor run, by verdict (docs/verdicts.md).")
	counts := r.Counts()
	for _, v := range verdict.All {
		fmt.Fprintf(&b, "lockctl_locks{verdict=%s} %d\n", promLabel(string(v)), counts[v])
	}

	family("lockctl_lock_age_seconds", "Seconds since each lock that is neither live nor free was modified; NaN when unknown.")
	for _, res := range r.Results {
		if res.Verdict == verdict.Live || res.Verdict == verdict.Free || !Shows(r.Only, res.Verdict) {
			continue
		}
		labels := "path=" + promLabel(res.Lock.Path)
		if !utf8.ValidString(res.Lock.Path) || hasControl(res.Lock.Path) {
			labels += ",path_shell=" + promLabel(ShellQuote(res.Lock.Path))
		}
		labels += ",verdict=" + promLabel(string(res.Verdict))
		age := "NaN"
		if s := ageSeconds(r.Now, res.Modified); s != nil {
			age = strconv.FormatInt(*s, 10)
		}
		fmt.Fprintf(&b, "lockctl_lock_age_seconds{%s} %s\n", labels, age)
	}

	family("lockctl_not_locks", "Files named like locks that are data, not locks (dependency manifests such as Cargo.lock): never judged, never removed.")
	fmt.Fprintf(&b, "lockctl_not_locks %d\n", len(r.NotLocks))

	if r.Outcomes != nil {
		family("lockctl_fix_actions", "What lockctl doctor --fix did to the locks it judged, by action.")
		actions := r.Actions()
		for _, a := range []fix.Action{fix.Removed, fix.Restored, fix.Kept, fix.Skipped} {
			fmt.Fprintf(&b, "lockctl_fix_actions{action=%s} %d\n", promLabel(string(a)), actions[a])
		}
	}

	family("lockctl_scan_errors", "Problems that did not stop the run: registries or subtrees that could not be read.")
	fmt.Fprintf(&b, "lockctl_scan_errors %d\n", len(r.Errors))
	family("lockctl_scan_unread_directories", "Directories the run did not read, or not in full (unreadable, or deeper than the walk's limit): locks there were not seen.")
	fmt.Fprintf(&b, "lockctl_scan_unread_directories %d\n", len(r.Unread))
	family("lockctl_scan_duration_seconds", "How long the run took, from the start of the scan to the report.")
	fmt.Fprintf(&b, "lockctl_scan_duration_seconds %s\n", strconv.FormatFloat(math.Max(took.Seconds(), 0), 'f', -1, 64))
	family("lockctl_scan_timestamp_seconds", "When the run started, in seconds since the Unix epoch.")
	fmt.Fprintf(&b, "lockctl_scan_timestamp_seconds %s\n", strconv.FormatFloat(float64(r.Now.UnixMilli())/1000, 'f', 3, 64))

	_, err := io.WriteString(w, b.String())
	return err
}

// promLabel returns s as a quoted label value of the text exposition
// format: backslash, double quote and line feed escaped (the only escapes
// the format has), and each byte that is not valid UTF-8 replaced by U+FFFD,
// as encoding/json does, since a label value must be UTF-8.
func promLabel(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			// ESC, CR, C1, ...: the exposition format has no escape for
			// them, and raw they rewrite a terminal or a log line. The
			// path_shell label carries the exact bytes.
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteByte('"')
	return b.String()
}

// hasControl reports whether s holds a control character other than a
// newline, which label values cannot carry as they are.
func hasControl(s string) bool {
	for _, r := range s {
		if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

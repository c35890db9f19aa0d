package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

func TestPromLabel(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"plain", "/run/lock/a.lock", `"/run/lock/a.lock"`},
		{"empty", "", `""`},
		{"backslash", `a\b`, `"a\\b"`},
		{"backslash n is not a newline", `a\nb`, `"a\\nb"`},
		{"double quote", `a"b`, `"a\"b"`},
		{"newline", "a\nb", `"a\nb"`},
		{"all three", "\\\"\n", `"\\\"\n"`},
		// Control characters would rewrite a terminal or a log line: the
		// path_shell label carries their bytes.
		{"tab, escape, CR and C1 are replaced", "a\tb\x1bc\rd\u0085e", "\"a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\""},
		{"utf-8 stays", "é.lock", `"é.lock"`},
		{"invalid byte", "a\xffb", "\"a\uFFFDb\""},
		{"each invalid byte", "a\xff\xfeb", "\"a\uFFFD\uFFFDb\""},
		{"truncated utf-8", "a\xe2\x80", "\"a\uFFFD\uFFFD\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := promLabel(tt.in); got != tt.want {
				t.Errorf("promLabel(%q) = %s, want %s", tt.in, got, tt.want)
			}
			// Whatever the input, the result reads back through a strict
			// reader of the format.
			p := &promParser{line: "x{l=" + promLabel(tt.in) + "} 1"}
			s, err := p.sample()
			if err != nil {
				t.Fatalf("promLabel(%q) = %s does not parse: %v", tt.in, promLabel(tt.in), err)
			}
			want := strings.Map(func(r rune) rune {
				if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0) {
					return utf8.RuneError
				}
				return r
			}, jsonRoundTrip(t, tt.in))
			if s.labels["l"] != want {
				t.Errorf("promLabel(%q) reads back as %q, want %q", tt.in, s.labels["l"], want)
			}
		})
	}
}

// jsonRoundTrip is s as the JSON "path" carries it: each invalid byte
// becomes U+FFFD.
func jsonRoundTrip(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// hostileReport has a lock of every verdict and paths with every
// character the label escaping is about, twice over for invalid UTF-8:
// two paths that differ only in an invalid byte.
func hostileReport(now time.Time) *Report {
	lock := func(p string) *scan.Lock { return &scan.Lock{Path: p, Kind: scan.KindFile, Format: scan.FormatPid} }
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	return &Report{
		Host: verdict.Host{Name: "h", BootID: "b"},
		Now:  now,
		Results: []*verdict.Result{
			{Lock: lock("/run/lock/gone.lock"), Verdict: verdict.Gone, Modified: at(90 * time.Second)},
			{Lock: lock(`/run/lock/quote"and\back.lock`), Verdict: verdict.Gone, Modified: at(2 * time.Hour)},
			{Lock: lock("/run/lock/new\nline.lock"), Verdict: verdict.Ownerless, Modified: at(3 * time.Hour)},
			{Lock: lock("/run/lock/bad\xff.lock"), Verdict: verdict.Ownerless, Modified: at(time.Minute)},
			{Lock: lock("/run/lock/bad\xfe.lock"), Verdict: verdict.Ownerless, Modified: at(time.Minute)},
			{Lock: lock("/run/lock/bad\uFFFD.lock"), Verdict: verdict.Ownerless, Modified: at(time.Minute)},
			{Lock: lock("/run/lock/claimed.lock"), Verdict: verdict.Claimed},
			{Lock: lock("/run/lock/recycled.lock"), Verdict: verdict.Recycled, Modified: at(time.Second)},
			{Lock: lock("/run/lock/unknown.lock"), Verdict: verdict.Unknown, Modified: at(-time.Minute)},
			{Lock: lock("/run/lock/foreign.lock"), Verdict: verdict.Foreign, Modified: at(time.Hour)},
			{Lock: lock("/run/lock/live.lock"), Verdict: verdict.Live, Modified: at(time.Hour)},
		},
		Errors: []string{"cannot read /x: permission denied", "cannot read /y: permission denied"},
	}
}

// TestPrometheusAgreesWithJSON renders one report both ways and checks
// that every number the Prometheus form carries is the JSON's.
func TestPrometheusAgreesWithJSON(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 500e6, time.UTC)
	for _, withFix := range []bool{false, true} {
		t.Run(fmt.Sprintf("fix=%v", withFix), func(t *testing.T) {
			rep := hostileReport(now)
			if withFix {
				rep.Outcomes = map[*scan.Lock]fix.Outcome{
					rep.Results[0].Lock: {Action: fix.Removed},
					rep.Results[1].Lock: {Action: fix.Kept},
					rep.Results[2].Lock: {Action: fix.Skipped},
				}
			}
			var jb, pb bytes.Buffer
			if err := WriteJSON(&jb, rep); err != nil {
				t.Fatal(err)
			}
			if err := WritePrometheus(&pb, rep, 1500*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Counts  map[string]int `json:"counts"`
				Actions map[string]int `json:"actions"`
				Errors  []string       `json:"errors"`
				Locks   []struct {
					Path       string `json:"path"`
					PathShell  string `json:"path_shell"`
					Verdict    string `json:"verdict"`
					AgeSeconds *int64 `json:"age_seconds"`
				} `json:"locks"`
			}
			if err := json.Unmarshal(jb.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			fams, err := parseProm(pb.String())
			if err != nil {
				t.Fatalf("the Prometheus form does not parse: %v\n%s", err, pb.String())
			}

			locks := fams["lockctl_locks"]
			if len(locks) != len(verdict.All) {
				t.Errorf("lockctl_locks has %d samples, want one per verdict (%d)", len(locks), len(verdict.All))
			}
			for _, s := range locks {
				if want := doc.Counts[s.labels["verdict"]]; s.value != float64(want) {
					t.Errorf("lockctl_locks{verdict=%q} = %v, want the JSON count %d", s.labels["verdict"], s.value, want)
				}
			}

			type key struct{ path, shell, verdict string }
			ages := map[key]float64{}
			for _, s := range fams["lockctl_lock_age_seconds"] {
				ages[key{s.labels["path"], s.labels["path_shell"], s.labels["verdict"]}] = s.value
			}
			n := 0
			for _, l := range doc.Locks {
				if l.Verdict == "live" {
					continue
				}
				n++
				got, ok := ages[key{l.Path, l.PathShell, l.Verdict}]
				switch {
				case !ok:
					t.Errorf("no lockctl_lock_age_seconds{path=%q,path_shell=%q,verdict=%q}", l.Path, l.PathShell, l.Verdict)
				case l.AgeSeconds == nil && !math.IsNaN(got):
					t.Errorf("age of %q = %v, want NaN (JSON age_seconds is null)", l.Path, got)
				case l.AgeSeconds != nil && got != float64(*l.AgeSeconds):
					t.Errorf("age of %q = %v, want the JSON age_seconds %d", l.Path, got, *l.AgeSeconds)
				}
			}
			if len(fams["lockctl_lock_age_seconds"]) != n {
				t.Errorf("lockctl_lock_age_seconds has %d samples, want %d (every lock not live)", len(fams["lockctl_lock_age_seconds"]), n)
			}

			if got := fams["lockctl_scan_errors"]; len(got) != 1 || got[0].value != float64(len(doc.Errors)) {
				t.Errorf("lockctl_scan_errors = %v, want %d", got, len(doc.Errors))
			}
			if got := fams["lockctl_scan_duration_seconds"]; len(got) != 1 || got[0].value != 1.5 {
				t.Errorf("lockctl_scan_duration_seconds = %v, want 1.5", got)
			}
			if got := fams["lockctl_scan_timestamp_seconds"]; len(got) != 1 || got[0].value != float64(now.UnixMilli())/1000 {
				t.Errorf("lockctl_scan_timestamp_seconds = %v, want %v", got, float64(now.UnixMilli())/1000)
			}

			acts, ok := fams["lockctl_fix_actions"]
			if ok != withFix {
				t.Fatalf("lockctl_fix_actions present = %v, want %v (only after --fix)", ok, withFix)
			}
			for _, s := range acts {
				if want := doc.Actions[s.labels["action"]]; s.value != float64(want) {
					t.Errorf("lockctl_fix_actions{action=%q} = %v, want the JSON %d", s.labels["action"], s.value, want)
				}
			}
			if withFix && len(acts) != len(doc.Actions) {
				t.Errorf("lockctl_fix_actions has %d samples, want %d", len(acts), len(doc.Actions))
			}
		})
	}
}

// TestPrometheusEmpty: no locks still gives every verdict, at zero.
func TestPrometheusEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WritePrometheus(&b, &Report{Now: time.Unix(1700000000, 0)}, 0); err != nil {
		t.Fatal(err)
	}
	fams, err := parseProm(b.String())
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, b.String())
	}
	var got []string
	for _, s := range fams["lockctl_locks"] {
		got = append(got, fmt.Sprintf("%s=%v", s.labels["verdict"], s.value))
	}
	want := "gone=0 claimed=0 recycled=0 ownerless=0 unknown=0 foreign=0 live=0 idle=0 free=0"
	if strings.Join(got, " ") != want {
		t.Errorf("lockctl_locks = %s, want %s", strings.Join(got, " "), want)
	}
	if n := len(fams["lockctl_lock_age_seconds"]); n != 0 {
		t.Errorf("lockctl_lock_age_seconds has %d samples, want 0", n)
	}
}

// TestPrometheusPromtool runs the real parser, when it is installed.
func TestPrometheusPromtool(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool is not installed (Debian: apt-get install prometheus)")
	}
	rep := hostileReport(time.Now())
	rep.Outcomes = map[*scan.Lock]fix.Outcome{}
	var b bytes.Buffer
	if err := WritePrometheus(&b, rep, time.Second); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = &b
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

type promSample struct {
	labels map[string]string
	value  float64
}

// parseProm reads the text exposition format strictly, independently of
// the writer: every family has HELP then TYPE before its samples, its
// samples are together, label values use only the three escapes and are
// UTF-8, no two samples of a family share a label set, and no sample has
// a timestamp.
func parseProm(text string) (map[string][]promSample, error) {
	fams := map[string][]promSample{}
	seen := map[string]bool{}
	var cur, helped string
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("no final newline")
	}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		errf := func(format string, args ...any) error {
			return fmt.Errorf("line %d %q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		if !utf8.ValidString(line) {
			return nil, errf("not UTF-8")
		}
		switch {
		case strings.HasPrefix(line, "# HELP "):
			f := strings.SplitN(line, " ", 4)
			if len(f) != 4 || f[3] == "" {
				return nil, errf("HELP without text")
			}
			if _, ok := fams[f[2]]; ok {
				return nil, errf("family %s again", f[2])
			}
			helped = f[2]
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Split(line, " ")
			if len(f) != 4 || f[2] != helped || f[3] != "gauge" {
				return nil, errf("want # TYPE %s gauge", helped)
			}
			cur = f[2]
			fams[cur] = nil
		case strings.HasPrefix(line, "#"):
			return nil, errf("unexpected comment")
		default:
			p := &promParser{line: line}
			s, err := p.sample()
			if err != nil {
				return nil, errf("%v", err)
			}
			if p.name != cur {
				return nil, errf("sample of %s outside its family (in %s)", p.name, cur)
			}
			var keys []string
			for k, v := range s.labels {
				keys = append(keys, k+"="+strconv.Quote(v))
			}
			sort.Strings(keys)
			id := p.name + "{" + strings.Join(keys, ",") + "}"
			if seen[id] {
				return nil, errf("duplicate series %s", id)
			}
			seen[id] = true
			fams[cur] = append(fams[cur], s)
		}
	}
	return fams, nil
}

type promParser struct {
	line string
	pos  int
	name string
}

func (p *promParser) sample() (promSample, error) {
	s := promSample{labels: map[string]string{}}
	i := strings.IndexAny(p.line, "{ ")
	if i <= 0 {
		return s, fmt.Errorf("no metric name")
	}
	p.name, p.pos = p.line[:i], i
	if p.line[p.pos] == '{' {
		p.pos++
		for p.pos < len(p.line) && p.line[p.pos] != '}' {
			eq := strings.IndexByte(p.line[p.pos:], '=')
			if eq <= 0 || p.pos+eq+1 >= len(p.line) || p.line[p.pos+eq+1] != '"' {
				return s, fmt.Errorf("bad label at %d", p.pos)
			}
			name := p.line[p.pos : p.pos+eq]
			p.pos += eq + 2
			var v strings.Builder
			for {
				if p.pos >= len(p.line) {
					return s, fmt.Errorf("unterminated label value")
				}
				c := p.line[p.pos]
				p.pos++
				if c == '"' {
					break
				}
				if c != '\\' {
					v.WriteByte(c)
					continue
				}
				if p.pos >= len(p.line) {
					return s, fmt.Errorf("backslash at the end")
				}
				switch e := p.line[p.pos]; e {
				case '\\', '"':
					v.WriteByte(e)
				case 'n':
					v.WriteByte('\n')
				default:
					return s, fmt.Errorf("invalid escape \\%c", e)
				}
				p.pos++
			}
			if _, dup := s.labels[name]; dup {
				return s, fmt.Errorf("label %s twice", name)
			}
			s.labels[name] = v.String()
			if p.pos < len(p.line) && p.line[p.pos] == ',' {
				p.pos++
			}
		}
		if p.pos >= len(p.line) {
			return s, fmt.Errorf("no closing brace")
		}
		p.pos++
	}
	rest := p.line[p.pos:]
	if !strings.HasPrefix(rest, " ") || strings.Count(rest, " ") != 1 {
		return s, fmt.Errorf("want one space and a value (no timestamp), got %q", rest)
	}
	v, err := strconv.ParseFloat(rest[1:], 64)
	if err != nil {
		return s, fmt.Errorf("value: %v", err)
	}
	s.value = v
	return s, nil
}

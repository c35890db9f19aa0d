package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// JSON strings cannot carry invalid UTF-8: encoding/json turns the byte
// into U+FFFD and "path" no longer names the file. path_shell carries it
// byte-exact, and only then.
func TestJSONPathShellForInvalidUTF8(t *testing.T) {
	name := "/run/lock/bad\xff.lock"
	rep := &Report{Now: time.Now(), Results: []*verdict.Result{
		{Lock: &scan.Lock{Path: name, Kind: scan.KindFile}, Verdict: verdict.Ownerless, Reason: "r"},
		{Lock: &scan.Lock{Path: "/run/lock/good.lock", Kind: scan.KindFile}, Verdict: verdict.Ownerless, Reason: "r"},
	}}
	var b bytes.Buffer
	if err := WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Locks []struct {
			Path      string `json:"path"`
			PathShell string `json:"path_shell"`
		} `json:"locks"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Locks[1].PathShell != "" {
		t.Errorf("path_shell for a valid UTF-8 path = %q, want it absent", doc.Locks[1].PathShell)
	}
	out, err := exec.Command("bash", "-c", "printf %s "+doc.Locks[0].PathShell).Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != name {
		t.Errorf("path_shell %q reads back as %q, want %q", doc.Locks[0].PathShell, out, name)
	}
}

// TestWriteJSONStreamsTheSameBytes: the JSON document, written a lock at a
// time, is byte for byte encoding/json's indented form of the whole
// document, with no locks, one, or several (with --fix outcomes, --only,
// errors and unread directories).
func TestWriteJSONStreamsTheSameBytes(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)
	mk := func(p string, v verdict.Verdict) verdict.Result {
		return verdict.Result{Lock: &scan.Lock{Path: p, Kind: scan.KindFile, Format: scan.FormatPid}, Verdict: v, Reason: "because <&>",
			Holder: &scan.Holder{Pid: 42, PidText: "42"}, Notes: []string{"a", "b"}, Modified: now.Add(-time.Hour)}
	}
	a, b, c := mk("/r/a.lock", verdict.Gone), mk("/r/b\xff.lock", verdict.Live), mk("/r/c.lock", verdict.Ownerless)
	reports := map[string]*Report{
		"none":    {Host: verdict.Host{Name: "h"}, Now: now},
		"one":     {Host: verdict.Host{Name: "h"}, Now: now, Results: []*verdict.Result{&a}},
		"several": {Host: verdict.Host{Name: "h", BootID: "b"}, Now: now, Results: []*verdict.Result{&a, &b, &c}, Errors: []string{"e"}, Unread: []Unread{{Path: "/r/x", Error: "denied"}}},
		"fix":     {Now: now, Results: []*verdict.Result{&a, &c}, Outcomes: map[*scan.Lock]fix.Outcome{a.Lock: {Action: fix.Removed, Reason: "gone"}}},
		"only":    {Now: now, Results: []*verdict.Result{&a, &b, &c}, Only: map[verdict.Verdict]bool{verdict.Live: true}},
	}
	for name, r := range reports {
		var got bytes.Buffer
		if err := WriteJSON(&got, r); err != nil {
			t.Fatal(err)
		}
		// The document as a whole, as encoding/json writes it.
		doc := jsonDoc{Version: Version, Host: r.Host.Name, BootID: r.Host.BootID, Time: r.Now.UTC().Format(time.RFC3339),
			Locks: []jsonLock{}, NotLocks: append([]NotLock{}, r.NotLocks...), Counts: r.Counts(), Errors: append([]string{}, r.Errors...), Complete: len(r.Unread) == 0, Unread: append([]Unread{}, r.Unread...)}
		if r.Outcomes != nil {
			doc.Actions = r.Actions()
		}
		for _, res := range r.Results {
			if !Shows(r.Only, res.Verdict) {
				continue
			}
			j := lockJSON(r.Now, *res)
			if o, ok := r.Outcomes[res.Lock]; ok {
				j.Action, j.ActionReason, j.Conflict = string(o.Action), o.Reason, o.Conflict
			}
			doc.Locks = append(doc.Locks, j)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: WriteJSON wrote\n%s\nwant\n%s", name, got.String(), want.String())
		}
	}
}

// TestSortOrder: the report's order, sorted in place, is the fail set
// first, then by verdict, then by path, and stable: for many shuffled
// results, it is what sorting a copy by those keys gives.
func TestSortOrder(t *testing.T) {
	vs := verdict.All
	fail := map[verdict.Verdict]bool{verdict.Gone: true, verdict.Unknown: true}
	rank := map[verdict.Verdict]int{}
	for i, v := range vs {
		rank[v] = i
		if !fail[v] {
			rank[v] += len(vs)
		}
	}
	for seed := uint64(1); seed <= 20; seed++ {
		var rs []verdict.Result
		x := seed
		for i := 0; i < 300; i++ {
			x = x*6364136223846793005 + 1442695040888963407
			v := vs[(x>>33)%uint64(len(vs))]
			p := fmt.Sprintf("/r/%03d.lock", (x>>40)%97) // duplicate paths: stability shows
			rs = append(rs, verdict.Result{Lock: &scan.Lock{Path: p}, Verdict: v, Reason: fmt.Sprint(i)})
		}
		want := slices.Clone(rs)
		slices.SortStableFunc(want, func(a, b verdict.Result) int {
			if rank[a.Verdict] != rank[b.Verdict] {
				return rank[a.Verdict] - rank[b.Verdict]
			}
			return strings.Compare(a.Lock.Path, b.Lock.Path)
		})
		ptrs := make([]*verdict.Result, len(rs))
		for i := range rs {
			ptrs[i] = &rs[i]
		}
		r := &Report{Results: ptrs, Fail: fail}
		r.Sort()
		for i := range want {
			if r.Results[i].Reason != want[i].Reason {
				t.Fatalf("seed %d: position %d holds result %s, want %s", seed, i, r.Results[i].Reason, want[i].Reason)
			}
		}
	}
}

// TestDebrisUnderItsOwnLabel: what others left beside a lock (abandoned
// builds) is listed apart from the lock's own remedy: a live lock's
// leftovers never appear as a "remove" of it (issue 31, item 13).
func TestDebrisUnderItsOwnLabel(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)
	live := verdict.Result{Lock: &scan.Lock{Path: "/r/x.lock", Kind: scan.KindDir, Format: scan.FormatLockctl}, Verdict: verdict.Live,
		Reason: "pid 42 is running", Modified: now, Debris: []verdict.Step{{Op: verdict.OpRmdir, Path: "/r/x.lock.new.t.9"}}}
	var b bytes.Buffer
	if err := WriteText(&b, &Report{Now: now, Results: []*verdict.Result{&live}}, NewStyles(&b)); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "  remove ") || !strings.Contains(out, "\n  debris  rmdir -- /r/x.lock.new.t.9\n") {
		t.Errorf("a live lock with an abandoned build beside it reads:\n%s", out)
	}
}

// TestWaitersFolded: a live lock with many waiters says how many, names a
// few, and folds the rest into one line.
func TestWaitersFolded(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)
	live := verdict.Result{Lock: &scan.Lock{Path: "/r/x.lock", Kind: scan.KindFile, Format: scan.FormatEmpty}, Verdict: verdict.Live,
		Reason: "flock held by pid 42 (flock)", Modified: now}
	for i := range 6 {
		live.Waiters = append(live.Waiters, verdict.KernelHolder{Pid: 100 + i, Comm: "flock", How: "flock", Mode: "WRITE"})
	}
	var b bytes.Buffer
	if err := WriteText(&b, &Report{Now: now, Results: []*verdict.Result{&live}}, NewStyles(&b)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "6 processes wait on it: pid 100,") || !strings.Contains(out, "and 3 more\n") || strings.Contains(out, "pid 105") {
		t.Errorf("a lock with six waiters reads:\n%s", out)
	}
}

package report

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// JSON strings cannot carry invalid UTF-8: encoding/json turns the byte
// into U+FFFD and "path" no longer names the file. path_shell carries it
// byte-exact, and only then.
func TestJSONPathShellForInvalidUTF8(t *testing.T) {
	name := "/run/lock/bad\xff.lock"
	rep := &Report{Now: time.Now(), Results: []verdict.Result{
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

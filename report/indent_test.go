package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// FuzzAppendIndent: on any valid JSON document, made compact as
// json.Marshal writes it, appendIndent writes what json.Indent writes.
func FuzzAppendIndent(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":[]}`, `{"a":{}}`, `[1,2,{"b":null}]`,
		`{"s":"a\"b\\","t":"{[,:]}"}`, `"x"`, `1`, ` { "a" : [ 1 , 2 ] } `,
		`{"e":"\u00e9\ud83d\ude00","n":-1.5e+10,"t":true,"f":false}`,
	} {
		f.Add([]byte(s))
	}
	j := lockJSON(time.Unix(1e9, 0), verdict.Result{
		Lock:    &scan.Lock{Path: "/run/x.lock"},
		Verdict: verdict.Gone,
		Reason:  "pid 7 is gone \"quoted\"",
	})
	b, _ := json.Marshal(j)
	f.Add(b)
	f.Fuzz(func(t *testing.T, src []byte) {
		var compact bytes.Buffer
		if json.Compact(&compact, src) != nil {
			return
		}
		src = compact.Bytes()
		var want bytes.Buffer
		if err := json.Indent(&want, src, "    ", "  "); err != nil {
			t.Fatal(err)
		}
		if got := appendIndent(nil, src, "    ", "  "); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("appendIndent(%q)\n got %q\nwant %q", src, got, want.Bytes())
		}
	})
}

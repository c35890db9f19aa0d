package remote

import (
	"strings"
	"testing"
)

func TestValidHost(t *testing.T) {
	for host, want := range map[string]bool{
		"hostb": true, "build-01.example.org": true, "10.0.0.7": true, "a": true,
		"": false, "-oProxyCommand=touch": false, "-p": false, "host name": false,
		"host;rm": false, "host$(x)": false, "user@host": false, "host:22": false,
		"h\nx": false, strings.Repeat("a", 254): false, ".host": false,
	} {
		if got := ValidHost(host); got != want {
			t.Errorf("ValidHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestReadRequest(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{`{"version":1,"records":[{"path":"/a.lock","format":"pid","bytes":"12\n"}]}`, ""},
		{`{"version":2,"records":[]}`, "version 2"},
		{`not json`, "not lockctl judge's JSON"},
		{`{"version":1,"records":[` + strings.Repeat(`{},`, MaxRecords) + `{}]}`, "more than"},
		{strings.Repeat(" ", MaxRequest+1), "larger than"},
	} {
		_, err := ReadRequest(strings.NewReader(c.in))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("ReadRequest(%.40q): %v", c.in, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ReadRequest(%.40q) = %v, want an error saying %q", c.in, err, c.err)
		}
	}
}

func TestCheckAnswer(t *testing.T) {
	recs := []Record{{Path: "/a.lock"}}
	ok := &Answer{Version: Version, Host: "hostb", Judged: []Judgment{{Path: "/a.lock", Verdict: "gone"}}}
	if err := check(ok, "hostb", recs); err != nil {
		t.Errorf("a good answer: %v", err)
	}
	for name, a := range map[string]*Answer{
		"another host":    {Version: Version, Host: "hostc", Judged: ok.Judged},
		"another version": {Version: 9, Host: "hostb", Judged: ok.Judged},
		"too few":         {Version: Version, Host: "hostb"},
		"another path":    {Version: Version, Host: "hostb", Judged: []Judgment{{Path: "/b.lock", Verdict: "gone"}}},
		"an odd verdict":  {Version: Version, Host: "hostb", Judged: []Judgment{{Path: "/a.lock", Verdict: "free-for-all"}}},
	} {
		if err := check(a, "hostb", recs); err == nil {
			t.Errorf("%s: taken, want refused", name)
		}
	}
}

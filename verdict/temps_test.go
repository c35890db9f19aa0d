package verdict

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/scan"
)

// TestTempsNeverChangeTheVerdict: a producer's temporaries are judged by
// their pid, on this host only, and the lock's verdict stays what its own
// record says.
func TestTempsNeverChangeTheVerdict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		lock    string
		verdict Verdict
		temp    string // the temporary's state: gone, running, unknown
	}{
		{"live lock, gone temporary", map[string]string{"passwd.lock": "100\x00", "passwd.200": "200\x00"}, "passwd.lock", Live, "gone"},
		{"gone lock, running temporary", map[string]string{"passwd.lock": "300\x00", "passwd.100": "100\x00"}, "passwd.lock", Gone, "running"},
		{"pid out of range", map[string]string{"passwd.lock": "300\x00", "passwd.40000": "40000\x00"}, "passwd.lock", Gone, "unknown"},
		{"another host's twin", map[string]string{"pubring.kbx.lock": fmt.Sprintf("%10d\n%s\n", 300, here), ".#lk0x55.not-" + here + ".300": fmt.Sprintf("%10d\nnot-%s\n", 300, here)}, ".#lk0x55.not-" + here + ".300", Free, "unknown"},
		{"no lock", map[string]string{".tX1-lock": fmt.Sprintf("%10d\n", 300)}, ".X1-lock", Free, "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, b := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			l, err := scan.ReadOne(dir, tc.lock)
			if err != nil || l == nil {
				t.Fatalf("ReadOne(%s) = %v, %v", tc.lock, l, err)
			}
			p := &fakeProbe{t: t, procs: map[int]Proc{100: alive}}
			r := (&Judge{Host: testHost(), Probe: p}).Judge(l)
			if r.Verdict != tc.verdict || len(r.Temps) != 1 || r.Temps[0].Word() != tc.temp {
				t.Errorf("Judge(%s) = %s (%s), temps %+v; want %s, its temporary %s", tc.lock, r.Verdict, r.Reason, r.Temps, tc.verdict, tc.temp)
			}
		})
	}
}

//go:build linux

package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// TestSlotsCountHolders: a counting lock of 3 slots admits three holders
// and no fourth; doctor says how many of the slots are held; each holder
// releases its own slot.
func TestSlotsCountHolders(t *testing.T) {
	r := lcNewReaper(t)
	dir := t.TempDir()
	l := filepath.Join(dir, "ci.lock")
	var holders []*lcProc
	for range 3 {
		s := r.sleeper()
		holders = append(holders, s)
		r.mustLockctl(0, "acquire", "--slots", "3", "--holder-pid", strconv.Itoa(s.pid), l)
	}
	res := r.lockctl(nil, "acquire", "--slots", "3", "--timeout", "300ms", "--holder-pid", strconv.Itoa(r.sleeper().pid), l)
	if res.code != cli.ExitTimeout || !strings.Contains(res.stderr, "all 3 slots are held") {
		t.Fatalf("a fourth holder of 3 slots: exit %d, want %d saying all are held\n%s", res.code, cli.ExitTimeout, res.stderr)
	}
	doc := r.lockctl(nil, "doctor", dir)
	if want := fmt.Sprintf("counting lock %s: 3 of 3 slots held", l); !strings.Contains(doc.stdout, want) {
		t.Errorf("doctor does not say %q:\n%s", want, doc.stdout)
	}
	testutil.WantNames(t, dir, "ci.lock", "ci.slot2.lock", "ci.slot3.lock")
	// A holder gone frees its slot for the next, who breaks it.
	holders[1].kill()
	r.waitGone(holders[1].pid)
	next := r.sleeper()
	r.mustLockctl(0, "acquire", "--slots", "3", "--timeout", "5s", "--holder-pid", strconv.Itoa(next.pid), l)
	for _, h := range []*lcProc{holders[0], holders[2], next} {
		r.mustLockctl(0, "release", "--slots", "3", "--holder-pid", strconv.Itoa(h.pid), l)
	}
	testutil.WantNames(t, dir)
}

// TestSlotsNeverMore: eight workers loop lockctl run --slots 2 around a
// section; the log of entries and exits never shows a third inside.
func TestSlotsNeverMore(t *testing.T) {
	r := lcNewReaper(t)
	dir, aux := t.TempDir(), t.TempDir()
	l := filepath.Join(dir, "x.lock")
	logf := filepath.Join(aux, "log")
	section := fmt.Sprintf(`echo "enter $$" >> %s; sleep 0.01; echo "exit $$" >> %s`, logf, logf)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				p := r.start(nil, lcBinary(t), "run", "--slots", "2", l, "--", "sh", "-c", section)
				if code := p.wait(60e9); code != 0 {
					t.Errorf("run --slots 2: exit %d\n%s", code, p.errText())
					return
				}
			}
		}()
	}
	wg.Wait()
	inside, most := map[string]bool{}, 0
	for _, line := range strings.Split(strings.TrimSpace(lcRead(t, logf)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) != 2:
			t.Fatalf("malformed log line %q", line)
		case f[0] == "enter":
			inside[f[1]] = true
		default:
			delete(inside, f[1])
		}
		most = max(most, len(inside))
	}
	if most > 2 {
		t.Fatalf("%d were inside a section of 2 slots at once", most)
	}
	testutil.WantNames(t, dir)
}

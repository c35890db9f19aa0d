//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ptyRun runs lockctl run under a new pseudo-terminal, as its foreground
// process group (Python's pty.fork does setsid and the controlling tty),
// types one Ctrl-C once CMD is ready, and returns how many SIGINTs CMD saw.
const ptyRun = `import os, pty, sys, time
lc, lock, ready, ints = sys.argv[1:5]
cmd = "import signal,time,sys\n" \
      "seen=[]\n" \
      "def h(s,f):\n" \
      "  open(%r,'a').write('INT\\n'); seen.append(time.time())\n" \
      "signal.signal(signal.SIGINT,h)\n" \
      "open(%r,'w').close()\n" \
      "t=time.time()\n" \
      "while time.time()-t<10 and not (seen and time.time()-seen[0]>0.3): time.sleep(0.005)\n" % (ints, ready)
pid, fd = pty.fork()
if pid == 0:
    os.execv(lc, ["lockctl", "run", lock, "--", sys.executable, "-c", cmd])
while not os.path.exists(ready):
    time.sleep(0.005)
os.write(fd, b"\x03")
os.waitpid(pid, 0)
`

// TestCtrlCReachesCMDOnce: at a terminal, Ctrl-C goes to the whole
// foreground process group, CMD included; lockctl run must not pass it on
// again (flock(1) delivers it once). With the bug, CMD sees a second SIGINT
// whenever lockctl's forward lands after CMD handled the first; the count
// must be exactly one, every time.
func TestCtrlCReachesCMDOnce(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	r := lcNewReaper(t)
	for i := 0; i < 5; i++ {
		dir := t.TempDir()
		script := filepath.Join(dir, "drive.py") // not pty.py: it would shadow the module
		if err := os.WriteFile(script, []byte(ptyRun), 0o644); err != nil {
			t.Fatal(err)
		}
		ints := filepath.Join(dir, "ints")
		p := r.start(nil, python, script, lcBinary(t), filepath.Join(dir, "x.lock"), filepath.Join(dir, "ready"), ints)
		if code := p.wait(30 * time.Second); code != 0 {
			t.Fatalf("the pty driver: exit %d\n%s", code, p.errText())
		}
		b, _ := os.ReadFile(ints)
		if n := strings.Count(string(b), "INT"); n != 1 {
			t.Fatalf("one Ctrl-C at the terminal reached CMD %d times under lockctl run", n)
		}
	}
}

//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// The programs whose lock files are held only by the kernel (issue 42):
// the go command's module cache, cargo's package cache and build
// directory, java.util.logging's <log>.lck, and Exim's hints-database
// lockfile (hand-made, byte for byte, from dbfn.c: the daemon is too heavy
// for CI), and flock(1)'s file, whose producer nothing names. Each real
// program makes its files; idle, each reads free (flock(1)'s idle), doctor
// exits 0 with no remedy, and --fix --legacy-older-than 1s removes none;
// held, each reads live, naming the holder.
func TestKernelLockProducers(t *testing.T) {
	r := lcNewReaper(t)
	root := t.TempDir()
	var locks []string // every file that must read free (or idle) and stay
	want := map[string]string{}
	add := func(path, verdict string) {
		locks = append(locks, path)
		want[path] = verdict
	}

	// Go: go mod download into a fresh module cache, from this machine's
	// own cache (it holds lockctl's dependencies), with no network.
	gomod := filepath.Join(root, "gomod")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go is not on PATH")
	}
	hostCache := strings.TrimSpace(run(t, exec.Command(goBin, "env", "GOMODCACHE")))
	mod := "github.com/urfave/cli/v2@" + goModVersion(t, "github.com/urfave/cli/v2")
	goEnv := []string{"GOMODCACHE=" + gomod, "GOPROXY=file://" + filepath.Join(hostCache, "cache", "download"),
		"GOSUMDB=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local", "GO111MODULE=on"}
	if p := r.start(goEnv, goBin, "mod", "download", mod); p.wait(2*time.Minute) != 0 {
		t.Fatalf("go mod download %s: %s", mod, p.errText())
	}
	vlocks, _ := filepath.Glob(filepath.Join(gomod, "cache", "download", "github.com", "urfave", "cli", "v2", "@v", "*.lock"))
	if len(vlocks) == 0 {
		t.Fatalf("go mod download left no <version>.lock under %s", gomod)
	}
	for _, l := range vlocks {
		add(l, "free")
	}

	// cargo: a build of a crate with no dependencies, offline, with a
	// CARGO_HOME and a target directory of its own.
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		if home, _ := os.UserHomeDir(); home != "" {
			cargo, err = exec.LookPath(filepath.Join(home, ".cargo", "bin", "cargo"))
		}
	}
	if err == nil {
		crate := filepath.Join(t.TempDir(), "p")
		testutil.Mkdir(t, filepath.Join(crate, "src"))
		testutil.WriteFile(t, filepath.Join(crate, "Cargo.toml"), []byte("[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"))
		testutil.WriteFile(t, filepath.Join(crate, "src", "main.rs"), []byte("fn main() {}\n"))
		cargoEnv := []string{"CARGO_HOME=" + filepath.Join(root, "cargo-home"), "CARGO_TARGET_DIR=" + filepath.Join(root, "target")}
		if p := r.start(cargoEnv, cargo, "build", "--offline", "--quiet", "--manifest-path", filepath.Join(crate, "Cargo.toml")); p.wait(3*time.Minute) != 0 {
			t.Fatalf("cargo build: %s", p.errText())
		}
		add(filepath.Join(root, "cargo-home", ".package-cache"), "free")
		add(filepath.Join(root, "cargo-home", ".package-cache-mutate"), "free")
		add(filepath.Join(root, "target", "debug", ".cargo-lock"), "free")
		// rustc's incremental session locks, under the same target.
		inc, _ := filepath.Glob(filepath.Join(root, "target", "debug", "incremental", "*", "s-*.lock"))
		if len(inc) == 0 {
			t.Errorf("cargo build left no incremental session lock under %s", root)
		}
		for _, l := range inc {
			add(l, "free")
		}
	} else {
		t.Log("cargo is not installed: its locks are not tried")
	}

	// java.util.logging: a FileHandler holds java0.log.lck; SIGKILLed, the
	// JVM leaves it behind.
	var jvm *lcProc
	jlock := filepath.Join(root, "java", "java0.log.lck")
	if java, err := exec.LookPath("java"); err == nil && hasJavaCompiler(java) {
		src := filepath.Join(t.TempDir(), "Log.java")
		testutil.WriteFile(t, src, []byte(`import java.util.logging.*;
public class Log {
  public static void main(String[] a) throws Exception {
    Logger l = Logger.getLogger("lockctl");
    l.addHandler(new FileHandler(a[0]));
    l.info("locked");
    System.out.println("locked");
    Thread.sleep(600000);
  }
}
`))
		testutil.Mkdir(t, filepath.Join(root, "java"))
		// No hsperfdata file in /tmp, which a SIGKILLed JVM leaves behind.
		jvm = r.start(nil, java, "-XX:-UsePerfData", src, filepath.Join(root, "java", "java0.log"))
		testutil.WaitFor(t, 60*time.Second, "the JVM to log", func() bool { return strings.Contains(jvm.outText(), "locked") || jvm.done() })
		if jvm.done() {
			t.Fatalf("java exited: %s", jvm.errText())
		}
		got := r.judgeOne(jlock)
		if got.Verdict != "live" || got.Producer != "java.util.logging" || !strings.Contains(got.Reason, fmt.Sprintf("pid %d ", jvm.pid)) || len(got.Remove) > 0 {
			t.Errorf("a running JVM's %s: %s of %q (%s), remove %q; want live, naming pid %d", jlock, got.Verdict, got.Producer, got.Reason, got.Remove, jvm.pid)
		}
		r.killTree(jvm.pid)
		add(jlock, "free")
	} else {
		t.Log("no JDK with a compiler: java.util.logging's lock is not tried")
	}

	// Exim: <spool>/db/retry.lockfile, made as dbfn_open makes it (empty,
	// O_RDWR|O_CREAT, 0640 under Debian's exim4).
	exim := filepath.Join(root, "spool", "exim4", "db", "retry.lockfile")
	testutil.Mkdir(t, filepath.Dir(exim))
	if err := os.WriteFile(exim, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	add(exim, "free")

	// flock(1): its file after `flock cron.lock true`, no producer known.
	cron := filepath.Join(root, "cron.lock")
	if p := r.start(nil, lcFlock(t), cron, "true"); p.wait(30*time.Second) != 0 {
		t.Fatalf("flock %s true: %s", cron, p.errText())
	}
	add(cron, "idle")

	// Idle: each reads as wanted, doctor exits 0, with no remedy.
	// An idle flock(1) file is idle by a complete look; where some
	// process's open files cannot be read (this sandbox's pid 1), it stays
	// ownerless, and fails the check, but with no remedy either.
	res := r.lockctl(nil, "doctor", "--json", root)
	byPath := judged(t, res)
	wantCode := 0
	for _, l := range locks {
		got, ok := byPath[l]
		if !ok {
			t.Errorf("doctor did not report %s", l)
			continue
		}
		partial := want[l] == "idle" && got.Verdict == "ownerless" && strings.Contains(strings.Join(got.Notes, " "), "not every process's open files could be read")
		if partial {
			wantCode = 1
		}
		if (got.Verdict != want[l] && !partial) || len(got.Remove) > 0 {
			t.Errorf("%s: %s (%s), remove %q; want %s, no remedy", l, got.Verdict, got.Reason, got.Remove, want[l])
		}
	}
	if len(byPath) != len(locks) {
		t.Errorf("doctor reported %d locks, want the %d made here:\n%s", len(byPath), len(locks), res.stdout)
	}
	if res.code != wantCode {
		t.Errorf("doctor on idle kernel-lock files: exit %d, want %d\n%s", res.code, wantCode, res.stdout)
	}
	r.mustLockctl(wantCode, "doctor", "--fix", "--legacy-older-than", "1s", root)
	for _, l := range locks {
		if !lcExists(l) {
			t.Errorf("--fix --legacy-older-than 1s removed %s", l)
		}
	}

	// Held, by the producer's own kind of lock: each reads live, naming
	// the holder. flock for Go's, cargo's and flock(1)'s; fcntl for Exim's
	// (and Java's, above).
	for _, l := range locks {
		if l == jlock {
			continue
		}
		var h *lcProc
		if l == exim {
			h = r.start(nil, lcPython(t), "-c", "import fcntl,sys,time\nf=open(sys.argv[1],'r+')\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint('locked',flush=True)\ntime.sleep(600)", l)
		} else {
			h = r.start(nil, lcFlock(t), "--no-fork", l, "sh", "-c", "echo locked; exec sleep 600")
		}
		testutil.WaitFor(t, 30*time.Second, "the holder of "+l, func() bool { return strings.Contains(h.outText(), "locked") || h.done() })
		got := r.judgeOne(l)
		if got.Verdict != "live" || !strings.Contains(got.Reason, fmt.Sprintf("pid %d ", h.pid)) || len(got.Remove) > 0 {
			t.Errorf("%s held by pid %d: %s (%s), remove %q; want live, naming it", l, h.pid, got.Verdict, got.Reason, got.Remove)
		}
		r.killTree(h.pid)
	}
}

// judged parses doctor --json's output into its locks, by path.
func judged(t *testing.T, res lcResult) map[string]lcLock {
	t.Helper()
	var doc lcDoc
	if err := jsonUnmarshal(res.stdout, &doc); err != nil {
		t.Fatalf("doctor --json: exit %d, %v\n%s\n%s", res.code, err, res.stdout, res.stderr)
	}
	out := map[string]lcLock{}
	for _, l := range doc.Locks {
		out[l.Path] = l
	}
	return out
}

// goModVersion is the version of module path that lockctl's go.mod
// requires: it is in this machine's module cache, since lockctl builds.
func goModVersion(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == path {
			return fs[1]
		}
	}
	t.Fatalf("go.mod does not require %s", path)
	return ""
}

// hasJavaCompiler says java can run a source file (JEP 330): a JDK, not a
// bare JRE.
func hasJavaCompiler(java string) bool {
	out, err := exec.Command(java, "-XX:-UsePerfData", "--list-modules").Output()
	return err == nil && strings.Contains(string(out), "jdk.compiler@")
}

func run(t *testing.T, c *exec.Cmd) string {
	t.Helper()
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	return string(out)
}

// lcFlock is flock(1)'s path, or the test fails.
func lcFlock(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("flock")
	if err != nil {
		t.Fatal("flock(1) (util-linux) is not installed")
	}
	return p
}

// lcPython is python3's path, or the test skips.
func lcPython(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	return p
}

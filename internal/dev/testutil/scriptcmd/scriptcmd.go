//go:build linux

// Package scriptcmd holds what lockctl's testscript scripts
// (testdata/script/*.txtar) run besides lockctl itself: the fixture
// commands (live, gone, zombie and recycled holders, records written byte
// for byte, snapshots of a tree, JSON checks), the conditions, the set-up
// of every script's environment, and expect-exit. It may import lockctl's
// packages, which internal/dev/testutil, whose fixtures these use, may not.
package scriptcmd

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// Cmds are the scripts' own commands.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"holder-live":        cmdHolderLive,
		"holder-gone":        cmdHolderGone,
		"holder-zombie":      cmdHolderZombie,
		"holder-recycled":    cmdHolderRecycled,
		"hold":               cmdHold,
		"scope":              cmdScope,
		"hostname":           cmdHostname,
		"bootid":             cmdBootID,
		"pid-beyond-max":     cmdPidBeyondMax,
		"readpid":            cmdReadPid,
		"epoch":              cmdEpoch,
		"mtime":              cmdMtime,
		"record":             cmdRecord,
		"rawfile":            cmdRawfile,
		"mkfifo":             cmdMkfifo,
		"sparse":             cmdSparse,
		"nest":               cmdNest,
		"await":              cmdAwait,
		"snapshot":           cmdSnapshot,
		"jsondoc":            cmdJSONDoc,
		"jsonlock":           cmdJSONLock,
		"remedies-name-real": cmdRemediesNameReal,
		"controlchars":       cmdControlChars,
	}
}

// Condition answers the scripts' own conditions: [root], and
// [all-visible], where root may look into every process.
func Condition(cond string) (bool, error) {
	switch cond {
	case "root":
		return os.Geteuid() == 0, nil
	case "all-visible":
		// Root may follow every process's descriptors and root:
		// not so where a sandbox's pid 1 hides its own even from
		// root.
		return os.Geteuid() == 0 && len(testutil.HiddenFromRoot()) == 0, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// Setup gives every script a clean, predictable environment: HOME is
// the work directory (so the default agmsg team directories are the
// script's own), no LOCKCTL_PATH or XDG_RUNTIME_DIR unless the script sets
// one, and no colour.
func Setup(env *testscript.Env) error {
	keep := env.Vars[:0]
	for _, kv := range env.Vars {
		name, _, _ := strings.Cut(kv, "=")
		if name == "LOCKCTL_PATH" || name == "XDG_RUNTIME_DIR" {
			continue
		}
		keep = append(keep, kv)
	}
	env.Vars = keep
	env.Setenv("HOME", env.WorkDir)
	env.Setenv("NO_COLOR", "1")
	return nil
}

// controlchars: set $ESC, $NL, $TAB, $XFF and $RLO to an escape, a newline,
// a tab, an invalid UTF-8 byte and U+202E (right-to-left override), for
// building hostile names. (Not set for every script, so the raw bytes stay
// out of testscript's environment dump.)
func cmdControlChars(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 0, "controlchars")
	ts.Setenv("ESC", "\x1b")
	ts.Setenv("NL", "\n")
	ts.Setenv("TAB", "\t")
	ts.Setenv("XFF", "\xff")
	ts.Setenv("RLO", "\u202e")
}

// ExpectExit is "expect-exit [-timeout=D] STATUS PROG [ARG...]": it runs PROG
// with this process's environment, directory and standard streams, and
// succeeds only if PROG exits with exactly STATUS within the timeout
// (default 60s), so a hang fails as a hang rather than as a test timeout.
func ExpectExit() {
	args := os.Args[1:]
	timeout := 60 * time.Second
	if len(args) > 0 && strings.HasPrefix(args[0], "-timeout=") {
		d, err := time.ParseDuration(strings.TrimPrefix(args[0], "-timeout="))
		if err != nil {
			fmt.Fprintf(os.Stderr, "expect-exit: %v\n", err)
			os.Exit(100)
		}
		timeout, args = d, args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: expect-exit [-timeout=D] STATUS PROG [ARG...]")
		os.Exit(100)
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "expect-exit: bad status %q\n", args[0])
		os.Exit(100)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	timedOut := ctx.Err() != nil
	cancel()
	var ee *exec.ExitError
	switch {
	case timedOut:
		fmt.Fprintf(os.Stderr, "expect-exit: %s did not finish within %v (a hang)\n", args[1], timeout)
		os.Exit(101)
	case err != nil && !errors.As(err, &ee):
		fmt.Fprintf(os.Stderr, "expect-exit: cannot run %s: %v\n", args[1], err)
		os.Exit(102)
	}
	if got := cmd.ProcessState.ExitCode(); got != want {
		fmt.Fprintf(os.Stderr, "expect-exit: %s exited with %v, want exit status %d\n", args[1], cmd.ProcessState, want)
		os.Exit(103)
	}
	os.Exit(0)
}

func usage(ts *testscript.TestScript, neg bool, args []string, n int, syntax string) {
	if neg {
		ts.Fatalf("unsupported: ! %s", syntax)
	}
	if n >= 0 && len(args) != n {
		ts.Fatalf("usage: %s", syntax)
	}
}

// scriptT lets a testscript command use the fixtures of internal/dev/testutil:
// what they start lasts until the script ends.
type scriptT struct{ *testscript.TestScript }

func (scriptT) Helper()            {}
func (s scriptT) Cleanup(f func()) { s.Defer(f) }

// holder-live NAME: start a process that keeps running until the script
// ends, and set $NAME to its pid.
func cmdHolderLive(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 1, "holder-live NAME")
	ts.Setenv(args[0], strconv.Itoa(testutil.Sleeper(scriptT{ts}).Process.Pid))
}

// holder-gone NAME: set $NAME to the pid of a process that has exited and
// been reaped, and that no process has taken since.
func cmdHolderGone(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 1, "holder-gone NAME")
	ts.Setenv(args[0], strconv.Itoa(testutil.Gone(scriptT{ts})))
}

// holder-zombie NAME: start a child that exits at once and is not waited
// for until the script ends, wait until the kernel shows it as a zombie
// (state Z), and set $NAME to its pid.
func cmdHolderZombie(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 1, "holder-zombie NAME")
	ts.Setenv(args[0], strconv.Itoa(testutil.Zombie(scriptT{ts}).Process.Pid))
}

// holder-recycled NAME FILE [LINE...]: start a live process and set $NAME
// to its pid; write the LINEs, expanded after $NAME is set (so '$NAME' in
// single quotes names the new pid), to FILE as record does; then set FILE's
// modification time an hour before that process started, so the record
// predates the process that now has the pid.
func cmdHolderRecycled(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, -1, "holder-recycled NAME FILE [LINE...]")
	if len(args) < 2 {
		ts.Fatalf("usage: holder-recycled NAME FILE [LINE...]")
	}
	before := time.Now().Add(-time.Hour)
	ts.Setenv(args[0], strconv.Itoa(testutil.Sleeper(scriptT{ts}).Process.Pid))
	if len(args) > 2 {
		cmdRecord(ts, false, args[1:])
	}
	file := ts.MkAbs(args[1])
	ts.Check(os.Chtimes(file, before, before))
}

func firstLine(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line), nil
}

// scope NAME: set $NAME to this machine's generation B scope digest, computed
// here independently of package verdict: sha256 of
// "agmsg-lock-scope:<machine-id>:<boot_id>:<pid namespace link>".
func cmdScope(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 1, "scope NAME")
	mid, err := firstLine("/etc/machine-id")
	if err != nil || mid == "" {
		ts.Fatalf("scope: /etc/machine-id: %v (empty: %v)", err, mid == "")
	}
	boot, err := firstLine("/proc/sys/kernel/random/boot_id")
	ts.Check(err)
	ns, err := os.Readlink("/proc/self/ns/pid")
	ts.Check(err)
	sum := sha256.Sum256([]byte("agmsg-lock-scope:" + mid + ":" + boot + ":" + ns))
	ts.Setenv(args[0], hex.EncodeToString(sum[:]))
}

// hostname NAME: set $NAME to os.Hostname().
func cmdHostname(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 1, "hostname NAME")
	h, err := os.Hostname()
	ts.Check(err)
	ts.Setenv(args[0], h)
}

// bootid NAME: set $NAME to this boot's id.
func cmdBootID(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 1, "bootid NAME")
	id, err := firstLine("/proc/sys/kernel/random/boot_id")
	ts.Check(err)
	ts.Setenv(args[0], id)
}

// pid-beyond-max NAME: set $NAME to /proc/sys/kernel/pid_max + 1, the
// smallest pid that can never exist here.
func cmdPidBeyondMax(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 1, "pid-beyond-max NAME")
	s, err := firstLine("/proc/sys/kernel/pid_max")
	ts.Check(err)
	n, err := strconv.Atoi(s)
	ts.Check(err)
	ts.Setenv(args[0], strconv.Itoa(n+1))
}

// readpid NAME FILE: set $NAME to the decimal pid FILE holds (leading spaces
// and a final newline allowed), failing if it holds anything else.
func cmdReadPid(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 2, "readpid NAME FILE")
	s := strings.TrimSpace(ts.ReadFile(args[1]))
	if _, err := strconv.Atoi(s); err != nil {
		ts.Fatalf("readpid: %s holds %q, not a pid", args[1], s)
	}
	ts.Setenv(args[0], s)
}

// epoch NAME DURATION: set $NAME to the Unix time now+DURATION in seconds.
func cmdEpoch(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 2, "epoch NAME DURATION")
	d, err := time.ParseDuration(args[1])
	ts.Check(err)
	ts.Setenv(args[0], strconv.FormatInt(time.Now().Add(d).Unix(), 10))
}

// mtime PATH DURATION: set PATH's access and modification times to
// now+DURATION.
func cmdMtime(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 2, "mtime PATH DURATION")
	d, err := time.ParseDuration(args[1])
	ts.Check(err)
	t := time.Now().Add(d)
	ts.Check(os.Chtimes(ts.MkAbs(args[0]), t, t))
}

// record PATH LINE...: write each LINE, with $VAR expanded (so single-quoted
// lines with spaces still expand), each ending in "\n". Parent directories
// are made as needed. testscript's own -- file sections are not expanded,
// which is why records that name pids are written with this.
func cmdRecord(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, -1, "record PATH LINE...")
	if len(args) < 1 {
		ts.Fatalf("usage: record PATH LINE...")
	}
	var b strings.Builder
	for _, l := range args[1:] {
		b.WriteString(os.Expand(l, ts.Getenv))
		b.WriteString("\n")
	}
	writeFile(ts, args[0], b.String())
}

// rawfile PATH CONTENT: write CONTENT, read as the body of a Go
// double-quoted string (\x00, \n, \t, ...), and nothing else: no final
// newline is added.
func cmdRawfile(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 2, "rawfile PATH CONTENT")
	s, err := strconv.Unquote(`"` + args[1] + `"`)
	if err != nil {
		ts.Fatalf("rawfile: bad content %q: %v", args[1], err)
	}
	writeFile(ts, args[0], s)
}

func writeFile(ts *testscript.TestScript, name, content string) {
	p := ts.MkAbs(name)
	ts.Check(os.MkdirAll(filepath.Dir(p), 0o777))
	ts.Check(os.WriteFile(p, []byte(content), 0o666))
}

// mkfifo PATH: make a named pipe.
func cmdMkfifo(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 1, "mkfifo PATH")
	ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o644))
}

// sparse PATH SIZE: write "4242\n" and extend the file, sparsely, to SIZE
// bytes (suffix K, M or G), so a reader that reads the whole file or trusts
// the first line is caught.
func cmdSparse(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 2, "sparse PATH SIZE")
	s, mult := args[1], int64(1)
	for suf, m := range map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if v, ok := strings.CutSuffix(s, suf); ok {
			s, mult = v, m
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	ts.Check(err)
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	_, err = f.WriteString("4242\n")
	ts.Check(err)
	ts.Check(f.Truncate(n * mult))
}

// nest NAME DIR DEPTH: make DIR/n/n/.../n, DEPTH directories below DIR, and
// set $NAME to the deepest one.
func cmdNest(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 3, "nest NAME DIR DEPTH")
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	p := ts.MkAbs(args[1])
	for range n {
		p = filepath.Join(p, "n")
	}
	ts.Check(os.MkdirAll(p, 0o777))
	ts.Setenv(args[0], p)
}

// await PATH: wait up to 10s for PATH to exist (a background command's
// lock).
func cmdAwait(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 1, "await PATH")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Lstat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("await: %s did not appear within 10s", args[0])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// snapshot OUT DIR: write to OUT one line per entry under DIR (never
// following a symbolic link): its name, type, permissions, inode, size,
// modification and change times, a symlink's target, and a regular file's
// SHA-256 (for files up to 1 MiB). Two snapshots compare equal only if
// nothing under DIR was created, removed, renamed, written or chmod'ed.
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 2, "snapshot OUT DIR")
	root := ts.MkAbs(args[1])
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := fmt.Sprintf("%q type=%v mode=%o ino=%d size=%d mtime=%d.%09d ctime=%d.%09d",
			rel, d.Type(), st.Mode&0o7777, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" target=%q", t)
		case d.Type().IsRegular() && st.Size <= 1<<20:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " sha256=" + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	ts.Check(err)
	sort.Strings(lines)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Join(lines, "\n")+"\n"), 0o666))
}

// decodeDoc parses the last command's stdout as exactly one JSON document.
func decodeDoc(ts *testscript.TestScript) map[string]any {
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile("stdout")))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("stdout is not a JSON document: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		ts.Fatalf("stdout holds more than one JSON document")
	}
	return doc
}

// checkFields checks KEY WANT pairs against v. KEY is a dotted path
// ("holder.pid", "counts.gone"); WANT is JSON compared by value
// ('"gone"', '[]', '1'), or ~REGEXP matched against a string value (or the
// JSON text of any other value), or "absent" for a key that must not be
// there.
func checkFields(ts *testscript.TestScript, what string, v map[string]any, pairs []string) {
	if len(pairs)%2 != 0 {
		ts.Fatalf("%s: KEY WANT pairs expected, got %q", what, pairs)
	}
	for i := 0; i < len(pairs); i += 2 {
		key, want := pairs[i], pairs[i+1]
		var cur any = v
		found := true
		for _, k := range strings.Split(key, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				found = false
				break
			}
			if cur, ok = m[k]; !ok {
				found = false
				break
			}
		}
		switch {
		case want == "absent":
			if found {
				ts.Fatalf("%s: %s is present (%v), want absent", what, key, cur)
			}
			continue
		case !found:
			ts.Fatalf("%s: no key %s", what, key)
		case strings.HasPrefix(want, "~"):
			s, ok := cur.(string)
			if !ok { // a number, object, ...: match its JSON text
				b, _ := json.Marshal(cur)
				s = string(b)
			}
			if !regexp.MustCompile(want[1:]).MatchString(s) {
				ts.Fatalf("%s: %s = %q, want a match for %s", what, key, s, want[1:])
			}
			continue
		}
		dec := json.NewDecoder(strings.NewReader(want))
		dec.UseNumber()
		var w any
		if err := dec.Decode(&w); err != nil {
			ts.Fatalf("%s: WANT for %s is not JSON: %q", what, key, want)
		}
		if !reflect.DeepEqual(cur, w) {
			got, _ := json.Marshal(cur)
			ts.Fatalf("%s: %s = %s, want %s", what, key, got, want)
		}
	}
}

// jsondoc KEY WANT...: the last stdout is one JSON document whose fields
// match (see checkFields).
func cmdJSONDoc(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, -1, "jsondoc KEY WANT...")
	checkFields(ts, "jsondoc", decodeDoc(ts), args)
}

// jsonlock PATH KEY WANT...: the last stdout is one JSON document with
// exactly one lock whose path is PATH, and its fields match. With "!", no
// lock has that path.
func cmdJSONLock(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || neg && len(args) != 1 {
		ts.Fatalf("usage: [!] jsonlock PATH [KEY WANT...]")
	}
	doc := decodeDoc(ts)
	locks, ok := doc["locks"].([]any)
	if !ok {
		ts.Fatalf("jsonlock: no locks array")
	}
	var match []map[string]any
	for _, l := range locks {
		if m, ok := l.(map[string]any); ok && m["path"] == args[0] {
			match = append(match, m)
		}
	}
	switch {
	case neg && len(match) > 0:
		ts.Fatalf("jsonlock: %q is reported, want not", args[0])
	case neg:
		return
	case len(match) != 1:
		ts.Fatalf("jsonlock: %d locks with path %q, want 1", len(match), args[0])
	}
	checkFields(ts, "jsonlock "+args[0], match[0], args[1:])
}

var remedyLine = regexp.MustCompile(`^  (?:remove |       ) (rm|rmdir) -- (.*)$`)

// remedies-name-real MIN: every "rm -- P" and "rmdir -- P" line in the last
// stdout (text report) is parsed by bash and P must name an entry that
// exists; there must be at least MIN such lines. This proves the quoting
// survives pasting, whatever bytes the name holds. Nothing is removed.
func cmdRemediesNameReal(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, 1, "remedies-name-real MIN")
	min, err := strconv.Atoi(args[0])
	ts.Check(err)
	n := 0
	sc := bufio.NewScanner(strings.NewReader(ts.ReadFile("stdout")))
	for sc.Scan() {
		m := remedyLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n++
		// The quoted word is pasted into a shell exactly as printed.
		script := "p=" + m[2] + `; [ -e "$p" ] || [ -L "$p" ] || { printf 'no such entry: %q\n' "$p"; exit 1; }`
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil {
			ts.Fatalf("remedy %q does not name an existing entry: %v\n%s", sc.Text(), err, out)
		}
	}
	if n < min {
		ts.Fatalf("remedies-name-real: %d remedy lines, want at least %d", n, min)
	}
}

// hold PROG [ARG...]: start PROG in the background, as "exec PROG ARG... &"
// would (in the script's directory, with its PATH, HOME, TMPDIR and WORK
// and this process's other variables; no stdin), and stop it when the
// script ends, however it ends. testscript stops its own background
// commands with SIGINT and waits for them with no deadline: a holder that
// ignores SIGINT (as a non-interactive shell's background job does) holds
// the script until it exits on its own. A hold is in a process group of
// its own, which the script's end SIGKILLs and then waits for (at most
// testutil.KillWait); and it dies with this process (testutil.StartTied),
// so not even a SIGKILLed test binary leaves it running.
func cmdHold(ts *testscript.TestScript, neg bool, args []string) {
	usage(ts, neg, args, -1, "hold PROG [ARG...]")
	if len(args) < 1 {
		ts.Fatalf("usage: hold PROG [ARG...]")
	}
	prog := args[0]
	if !strings.Contains(prog, "/") {
		prog = ""
		for _, d := range filepath.SplitList(ts.Getenv("PATH")) {
			p := filepath.Join(d, args[0])
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				prog = p
				break
			}
		}
		if prog == "" {
			ts.Fatalf("hold: %s not found in the script's PATH", args[0])
		}
	}
	cmd := exec.Command(prog, args[1:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = os.Environ()
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "WORK"} {
		cmd.Env = testutil.SetEnv(cmd.Env, k, ts.Getenv(k))
	}
	cmd.Env = testutil.SetEnv(cmd.Env, "PWD", cmd.Dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second // the group is dead by then: nothing holds the pipe
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ts.Check(testutil.StartTied(cmd))
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	ts.Defer(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if _, ok := testutil.Within(waited, testutil.KillWait); !ok {
			ts.Fatalf("hold: %q (pid %d) was not reaped within %s of its SIGKILL", args, cmd.Process.Pid, testutil.KillWait)
		}
		if out.Len() > 0 {
			ts.Logf("hold %q said:\n%s", args, out.String())
		}
	})
}

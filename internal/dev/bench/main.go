//go:build linux

// Command bench is the reproducible benchmark of `lockctl doctor` at scale
// (issue 6, docs/performance.md). It builds a synthetic registry tree, builds
// lockctl, and times, alternating and with a warm cache:
//
//	(a) find ROOT -name '*.lock'
//	(b) lockctl doctor --json ROOT > /dev/null
//	(c) find ROOT -name '*.lock' -type f -exec sh -c 'pid=$(cat "$1" 2>/dev/null); kill -0 "$pid" 2>/dev/null' _ {} \;
//
// (c) is the common hand-rolled checker. It prints the medians, the ratios
// doctor/find and naive/doctor (each also per run, from the same round), and
// doctor's peak resident set size. It removes its tree and stops the
// processes it started.
//
//	go run ./internal/dev/bench -entries 100000 -locks 2000 -runs 5
//
// -mix NAME builds one of the named trees of package tree (tree.Mixes:
// default, all-dead, all-live, half, many-holders, one-holder, deep,
// shallow, formats), which set the kinds of lock, the holders and the
// depth; -live, -gone and -per-dir given on the command line still win.
// -mix all runs each in turn, each with a tree and holders of its own, and
// ends with a table of them all.
//
//	go run ./internal/dev/bench -mix all -entries 100000 -locks 20000 -runs 3 -naive=false
//
// It is built on Linux only: it reads statfs magic numbers, sysinfo and rusage.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/lockctl/lockctl/internal/dev/bench/tree"
	"github.com/lockctl/lockctl/internal/kernel"
	"golang.org/x/sys/unix"
)

var (
	entries = flag.Int("entries", 100_000, "entries in the tree (directories, files, locks and their records)")
	locks   = flag.Int("locks", 2_000, "locks among them")
	runs    = flag.Int("runs", 5, "timed runs of each command, alternating")
	perDir  = flag.Int("per-dir", 100, "entries per leaf directory, roughly")
	live    = flag.Int("live", 4, "live holder processes (sleep), shared by all live locks")
	gone    = flag.Int("gone", 50, "distinct reaped pids, shared by all gone locks")
	parent  = flag.String("dir", os.TempDir(), "where to make the tree")
	seed    = flag.Uint64("seed", 1, "seed for placing the locks")
	naive   = flag.Bool("naive", true, "also time the naive shell checker")
	keep    = flag.Bool("keep", false, "keep the tree and the binary (and say where); the holder processes are still stopped, so its live locks read as gone afterwards")
	bin     = flag.String("lockctl", "", "use this lockctl binary instead of building one")
	compare = flag.String("compare", "", "also time `doctor --json` of this second lockctl binary (e.g. a patched build), as doctor-b")
	mixFlag = flag.String("mix", "default", "the named tree to build (tree.Mixes), or all to run each in turn")
	openers = flag.Int("openers", 0, "extra processes (sleep) holding open files while doctor runs, as a busy machine has: an owner-less lock makes doctor look at each one's descriptors")
	openN   = flag.Int("opener-files", 3, "with -openers, the files each holds open")
)

func main() {
	if os.Getenv(runnerEnv) == "1" {
		runner()
		return
	}
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// cleanup holds what must be undone on every way out, interrupts included.
var cleanups []func()

func cleanupAll() {
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	cleanups = nil
}

func run() error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "bench: %v: cleaning up\n", s)
		cleanupAll()
		os.Exit(130)
	}()
	defer cleanupAll()

	var mixes []tree.Mix
	if *mixFlag == "all" {
		mixes = tree.Mixes
	} else {
		for _, name := range strings.Split(*mixFlag, ",") {
			m, ok := tree.MixNamed(name)
			if !ok {
				var names []string
				for _, m := range tree.Mixes {
					names = append(names, m.Name)
				}
				return fmt.Errorf("no mix %q (have %s, or all)", name, strings.Join(names, ", "))
			}
			mixes = append(mixes, m)
		}
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })

	// Start the runner first, while this process is still small: see
	// runnerEnv.
	if err := startRunner(); err != nil {
		return err
	}
	cleanups = append(cleanups, stopRunner)

	printMachine()

	work, err := os.MkdirTemp(*parent, "lockctl-bench-")
	if err != nil {
		return err
	}
	if work, err = filepath.EvalSymlinks(work); err != nil {
		return err
	}
	if *keep {
		fmt.Printf("keeping %s\n", work)
	} else {
		cleanups = append(cleanups, func() { os.RemoveAll(work) })
	}

	lockctl := *bin
	if lockctl == "" {
		lockctl = filepath.Join(work, "lockctl")
		if err := build(lockctl); err != nil {
			return err
		}
	}

	var sums []summary
	for _, m := range mixes {
		if !set["live"] {
			*live = m.Live
		}
		if !set["gone"] {
			*gone = m.Gone
		}
		perDir := *perDir
		if m.Depth == 1 && !set["per-dir"] {
			perDir = *entries
		}
		fmt.Printf("\nmix:     %s (%s)\n", m.Name, m.About)
		s, err := runMix(work, lockctl, m, perDir)
		if err != nil {
			return fmt.Errorf("mix %s: %w", m.Name, err)
		}
		sums = append(sums, s)
	}
	if len(sums) > 1 || *mixFlag != "default" {
		fmt.Printf("\n%d entries, %d locks, %d rounds (markdown):\n\n", *entries, *locks, *runs)
		fmt.Println("| mix | doctor / find (ratio of medians) | per-round median | doctor-b / doctor | CPU doctor / find (doctor-b / find) | doctor peak RSS | load average (before, after) |")
		fmt.Println("|---|---|---|---|---|---|---|")
		for _, s := range sums {
			b := "—"
			if s.vsB != 0 {
				b = fmt.Sprintf("%.2f×", s.vsB)
			}
			cpu := fmt.Sprintf("%.2f×", s.cpu)
			if s.cpuB != 0 {
				cpu += fmt.Sprintf(" (%.2f×)", s.cpuB)
			}
			fmt.Printf("| %s | %.2f× | %.2f× | %s | %s | %.1f MiB | %s, %s |\n", s.mix, s.ratio, s.perRound, b, cpu, s.rss, s.loadBefore, s.loadAfter)
		}
	}
	return nil
}

// summary is one mix's figures for the closing table.
type summary struct {
	mix                   string
	ratio, perRound, vsB  float64 // doctor/find; doctor-b/doctor, if timed
	cpu, cpuB             float64 // doctor's and doctor-b's CPU (user+sys) / find's, medians
	rss                   float64 // MiB
	loadBefore, loadAfter string
}

// runMix builds mix m's tree and holders, checks doctor's verdicts on it,
// times it, and removes both again.
func runMix(work, lockctl string, m tree.Mix, perDir int) (summary, error) {
	mark := len(cleanups)
	defer cleanupTo(mark)
	dir := filepath.Join(work, m.Name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return summary{}, err
	}
	if !*keep {
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	}
	root, counts, err := buildTree(dir, m, perDir)
	if err != nil {
		return summary{}, err
	}
	if err := verify(lockctl, root, counts); err != nil {
		return summary{}, err
	}
	if *compare != "" {
		if err := verify(*compare, root, counts); err != nil {
			return summary{}, fmt.Errorf("%s: %w", *compare, err)
		}
	}
	before := loadAvg()
	cmds, err := timeAll(lockctl, root)
	if err != nil {
		return summary{}, err
	}
	s := report(cmds)
	s.mix, s.loadBefore, s.loadAfter = m.Name, before, loadAvg()
	fmt.Printf("load:    %s before the timed runs, %s after\n", s.loadBefore, s.loadAfter)
	return s, nil
}

// cleanupTo runs the cleanups registered since there were n, newest first.
func cleanupTo(n int) {
	for len(cleanups) > n {
		f := cleanups[len(cleanups)-1]
		cleanups = cleanups[:len(cleanups)-1]
		f()
	}
}

// loadAvg is the 1-, 5- and 15-minute load average.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// buildTree lays out the benchmark tree under work, with its live and
// gone holders (stopped at cleanup), and says what it made.
func buildTree(work string, m tree.Mix, perDir int) (string, tree.Counts, error) {
	root := filepath.Join(work, "tree")
	if err := os.Mkdir(root, 0o755); err != nil {
		return "", tree.Counts{}, err
	}
	fmt.Printf("tree:    %s (%s)\n", root, fsType(root))

	procs, err := tree.StartProcs(*live, *gone)
	if err != nil {
		return "", tree.Counts{}, err
	}
	cleanups = append(cleanups, procs.Stop)
	if *openers > 0 {
		stop, err := tree.StartOpeners(work, *openers, *openN)
		if err != nil {
			return "", tree.Counts{}, err
		}
		cleanups = append(cleanups, stop)
		fmt.Printf("openers: %d sleep processes holding %d files each\n", *openers, *openN)
	}

	t0 := time.Now()
	counts, err := tree.Build(root, tree.Spec{
		Entries: *entries, Locks: *locks, PerDir: perDir, Seed: *seed,
		Host: kernel.LocalHost(), Procs: procs, Kinds: m.Kinds, Depth: m.Depth,
	})
	if err != nil {
		return "", tree.Counts{}, fmt.Errorf("building the tree: %w", err)
	}
	fmt.Printf("built:   %d entries (%d directories, %d plain files, %d locks) in %v\n",
		counts.Entries, counts.Dirs, counts.Files, counts.Locks, time.Since(t0).Round(time.Millisecond))
	var kinds []string
	for _, k := range tree.AllKinds {
		if counts.ByKind[k] == 0 {
			continue
		}
		kinds = append(kinds, fmt.Sprintf("%s %d", k, counts.ByKind[k]))
	}
	fmt.Printf("locks:   %s\n", strings.Join(kinds, ", "))
	fmt.Printf("holders: %d live sleep processes, %d reaped pids\n", len(procs.Live), len(procs.Gone))
	return root, counts, nil
}

// timeAll times find and doctor (and the commands -compare and -naive
// add) over root, each run once untimed to warm the cache, then -runs
// rounds alternating, the order rotating every round.
func timeAll(lockctl, root string) ([]*tool, error) {
	cmds := []*tool{
		{name: "find", argv: []string{"find", root, "-name", "*.lock"}},
		{name: "doctor", argv: []string{lockctl, "doctor", "--json", root}, okCodes: []int{0, 1}},
	}
	if *compare != "" {
		cmds = append(cmds, &tool{name: "doctor-b", argv: []string{*compare, "doctor", "--json", root}, okCodes: []int{0, 1}})
	}
	if *naive {
		cmds = append(cmds, &tool{name: "naive", argv: []string{"find", root, "-name", "*.lock", "-type", "f", "-exec", "sh", "-c",
			`pid=$(cat "$1" 2>/dev/null); kill -0 "$pid" 2>/dev/null`, "_", "{}", ";"}})
	}
	// Warm the cache (dentries, inodes, the binaries), untimed.
	for _, c := range cmds {
		if _, err := c.run(); err != nil {
			return nil, err
		}
	}
	fmt.Printf("\n%d timed runs of each, alternating (order rotates every round), warm cache:\n", *runs)
	for r := 0; r < *runs; r++ {
		for i := range cmds {
			c := cmds[(r+i)%len(cmds)]
			s, err := c.run()
			if err != nil {
				return nil, err
			}
			c.samples = append(c.samples, s)
		}
		line := fmt.Sprintf("  round %d:", r+1)
		for _, c := range cmds {
			line += fmt.Sprintf("  %s %v", c.name, c.samples[r].wall.Round(100*time.Microsecond))
		}
		fmt.Println(line)
	}
	return cmds, nil
}

// sample is one timed run of one command.
type sample struct {
	wall      time.Duration
	user, sys time.Duration
	maxRSS    int64 // bytes
}

type tool struct {
	name    string
	argv    []string
	okCodes []int // exit statuses that are not failures (besides 0)
	samples []sample
}

func (t *tool) run() (sample, error) {
	return runVia(t.name, t.argv, t.okCodes)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func medianF(fs []float64) float64 {
	s := slices.Clone(fs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func report(cmds []*tool) summary {
	var sum summary
	by := map[string]*tool{}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Println()
	fmt.Fprintln(tw, "command\tmedian\tmin\tmax\tmedian user\tmedian sys\tpeak RSS\t")
	for _, c := range cmds {
		by[c.name] = c
		var wall, user, sys []time.Duration
		var rss int64
		for _, s := range c.samples {
			wall, user, sys = append(wall, s.wall), append(user, s.user), append(sys, s.sys)
			rss = max(rss, s.maxRSS)
		}
		fmt.Fprintf(tw, "%s\t%v\t%v\t%v\t%v\t%v\t%.1f MiB\t\n", c.name,
			ms(median(wall)), ms(slices.Min(wall)), ms(slices.Max(wall)), ms(median(user)), ms(median(sys)), float64(rss)/(1<<20))
	}
	tw.Flush()

	ratio := func(a, b string) (ofMedians, perRound float64) {
		x, y := by[a], by[b]
		if x == nil || y == nil {
			return 0, 0
		}
		var per []float64
		var xs, ys []time.Duration
		for i := range x.samples {
			per = append(per, float64(x.samples[i].wall)/float64(y.samples[i].wall))
			xs, ys = append(xs, x.samples[i].wall), append(ys, y.samples[i].wall)
		}
		parts := make([]string, len(per))
		for i, p := range per {
			parts[i] = fmt.Sprintf("%.2f", p)
		}
		ofMedians, perRound = float64(median(xs))/float64(median(ys)), medianF(per)
		fmt.Printf("%s/%s: %.2fx (ratio of medians); per round %s, median %.2fx\n",
			a, b, ofMedians, strings.Join(parts, " "), perRound)
		return ofMedians, perRound
	}
	// CPU time moves less with the machine's load than wall time does.
	cpu := func(a, b string) float64 {
		x, y := by[a], by[b]
		if x == nil || y == nil {
			return 0
		}
		var xs, ys []time.Duration
		for i := range x.samples {
			xs, ys = append(xs, x.samples[i].user+x.samples[i].sys), append(ys, y.samples[i].user+y.samples[i].sys)
		}
		r := float64(median(xs)) / float64(median(ys))
		fmt.Printf("CPU (user+sys) %s/%s: %.2fx (ratio of medians)\n", a, b, r)
		return r
	}
	fmt.Println()
	sum.cpu, sum.cpuB = cpu("doctor", "find"), cpu("doctor-b", "find")
	sum.ratio, sum.perRound = ratio("doctor", "find")
	ratio("naive", "doctor")
	ratio("doctor-b", "find")
	_, sum.vsB = ratio("doctor-b", "doctor")
	if d := by["doctor"]; d != nil {
		var rss int64
		for _, s := range d.samples {
			rss = max(rss, s.maxRSS)
		}
		sum.rss = float64(rss) / (1 << 20)
		fmt.Printf("doctor peak RSS: %.1f MiB (max ru_maxrss over the timed runs; find's figure is the floor any child shows)\n", sum.rss)
	}
	return sum
}

// runnerEnv marks the runner: a copy of this program, started before it
// allocates anything, that starts every timed command and reports its wall
// time and rusage. Go starts children with vfork (CLONE_VM), so the kernel
// records the parent's high-water RSS as the child's ru_maxrss floor at
// exec; started from the small runner, a child's ru_maxrss is its own (or
// the runner's few MiB, whichever is more: find's figure shows that floor).
const runnerEnv = "LOCKCTL_BENCH_RUNNER"

type runRequest struct {
	Argv    []string
	OKCodes []int
}

type runReply struct {
	Wall, User, Sys int64 // nanoseconds
	MaxRSS          int64 // bytes
	Err             string
}

var (
	runnerCmd *exec.Cmd
	runnerIn  *json.Encoder
	runnerOut *json.Decoder
)

func startRunner() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	c := exec.Command(exe)
	c.Env = append(os.Environ(), runnerEnv+"=1")
	c.Stderr = os.Stderr
	in, err := c.StdinPipe()
	if err != nil {
		return err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	runnerCmd, runnerIn, runnerOut = c, json.NewEncoder(in), json.NewDecoder(out)
	return nil
}

func stopRunner() {
	if runnerCmd != nil {
		_ = runnerCmd.Process.Kill()
		_ = runnerCmd.Wait()
		runnerCmd = nil
	}
}

func runVia(name string, argv []string, ok []int) (sample, error) {
	if err := runnerIn.Encode(runRequest{Argv: argv, OKCodes: ok}); err != nil {
		return sample{}, fmt.Errorf("runner: %w", err)
	}
	var r runReply
	if err := runnerOut.Decode(&r); err != nil {
		return sample{}, fmt.Errorf("runner: %w", err)
	}
	if r.Err != "" {
		return sample{}, fmt.Errorf("%s: %s", name, r.Err)
	}
	return sample{wall: time.Duration(r.Wall), user: time.Duration(r.User), sys: time.Duration(r.Sys), maxRSS: r.MaxRSS}, nil
}

// runner runs each requested command with its output to /dev/null and
// replies with what it cost.
func runner() {
	in, out := json.NewDecoder(os.Stdin), json.NewEncoder(os.Stdout)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench runner:", err)
		os.Exit(1)
	}
	for {
		var req runRequest
		if err := in.Decode(&req); err != nil {
			return // the bench closed its end
		}
		var stderr bytes.Buffer
		c := exec.Command(req.Argv[0], req.Argv[1:]...)
		c.Stdout, c.Stderr = devnull, &stderr
		t0 := time.Now()
		err := c.Run()
		wall := time.Since(t0)
		var ee *exec.ExitError
		if errors.As(err, &ee) && slices.Contains(req.OKCodes, ee.ExitCode()) {
			err = nil
		}
		var r runReply
		if err != nil {
			r.Err = fmt.Sprintf("%v\n%s", err, stderr.String())
		} else {
			r.Wall, r.User, r.Sys = int64(wall), int64(c.ProcessState.UserTime()), int64(c.ProcessState.SystemTime())
			if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
				r.MaxRSS = ru.Maxrss << 10 // Linux reports KiB
			}
		}
		if err := out.Encode(r); err != nil {
			return
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

// build compiles lockctl from the module this program belongs to.
func build(out string) error {
	modDir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fmt.Errorf("go list -m (run this from inside the module): %w", err)
	}
	c := exec.Command("go", "build", "-o", out, ".")
	c.Dir = strings.TrimSpace(string(modDir))
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	t0 := time.Now()
	if err := c.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	fmt.Printf("lockctl: built %s in %v\n", out, time.Since(t0).Round(time.Millisecond))
	return nil
}

// verify runs doctor once and checks that it found every lock, each with
// the verdict its kind should get. A reaped pid that a new process has taken
// since reads as live or recycled, not gone: that is counted, not failed.
func verify(lockctl, root string, counts tree.Counts) error {
	var out, stderr bytes.Buffer
	c := exec.Command(lockctl, "doctor", "--json", root)
	c.Stdout, c.Stderr = &out, &stderr
	err := c.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return fmt.Errorf("lockctl doctor: %v\n%s", err, stderr.String())
	}
	var doc struct {
		Locks []struct {
			Path    string `json:"path"`
			Verdict string `json:"verdict"`
			Reason  string `json:"reason"`
		} `json:"locks"`
		Counts map[string]int `json:"counts"`
		Errors []string       `json:"errors"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		return fmt.Errorf("lockctl doctor --json: %w", err)
	}
	if len(doc.Locks) != counts.Locks {
		return fmt.Errorf("lockctl doctor reported %d locks, the tree holds %d", len(doc.Locks), counts.Locks)
	}
	findOut, err := exec.Command("find", root, "-name", "*.lock").Output()
	if err != nil {
		return err
	}
	if n := bytes.Count(findOut, []byte("\n")); n != counts.Locks {
		return fmt.Errorf("find found %d locks, the tree holds %d", n, counts.Locks)
	}
	re := regexp.MustCompile(`job(\d+)\.lock$`)
	wrong := map[string]int{}
	partial := map[tree.Kind]int{}
	var example []string
	for _, l := range doc.Locks {
		m := re.FindStringSubmatch(l.Path)
		if m == nil {
			return fmt.Errorf("doctor reported a lock the generator did not make: %s", l.Path)
		}
		n, _ := strconv.Atoi(m[1])
		k := counts.Kinds[n%len(counts.Kinds)]
		if l.Verdict == string(tree.PartialLook(k)) && l.Verdict != string(tree.Expected(k)) {
			partial[k]++
			continue
		}
		if want := tree.Expected(k); l.Verdict != string(want) {
			wrong[fmt.Sprintf("%s as %s", k, l.Verdict)]++
			if len(example) < 3 {
				example = append(example, l.Path+": "+l.Reason)
			}
		}
	}
	fmt.Printf("verify:  doctor reported all %d locks (counts %v), find %d, errors %d\n", len(doc.Locks), doc.Counts, counts.Locks, len(doc.Errors))
	for k, n := range partial {
		fmt.Printf("verify:  %d %s locks read %s, not %s: not every process's open files can be read here\n", n, k, tree.PartialLook(k), tree.Expected(k))
	}
	if len(wrong) > 0 {
		fmt.Printf("verify:  verdicts other than the kind's (a reaped pid reused since reads live or recycled): %v\n", wrong)
		for _, e := range example {
			fmt.Printf("         e.g. %s\n", e)
		}
	}
	return nil
}

func printMachine() {
	cpu := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	var u unix.Utsname
	_ = unix.Uname(&u)
	var si unix.Sysinfo_t
	_ = unix.Sysinfo(&si)
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	goVersion := runtime.Version()
	if v, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		goVersion = strings.TrimSpace(string(v))
	}
	fmt.Printf("machine: %d CPUs, %s, %.1f GiB RAM, kernel %s, %s, load %s\n",
		runtime.NumCPU(), cpu, float64(si.Totalram)*float64(si.Unit)/(1<<30), unix.ByteSliceToString(u.Release[:]), goVersion, load)
}

// fsType names the file system p is on.
func fsType(p string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return "?"
	}
	switch st.Type {
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	}
	return fmt.Sprintf("fs type %#x", st.Type)
}

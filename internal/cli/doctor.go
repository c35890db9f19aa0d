package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/doctor"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/internal/remote"
	"github.com/lockctl/lockctl/report"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
	"github.com/urfave/cli/v2"
)

// defaultFail is the fail set when --fail-on is not given.
var defaultFail = []verdict.Verdict{verdict.Gone, verdict.Recycled, verdict.Ownerless, verdict.Claimed, verdict.Unknown}

func doctorCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "judge every lock in the given registries and say what to remove (removes nothing unless --fix)",
		ArgsUsage: "[PATH...]",
		Description: `Each PATH is a registry directory, walked recursively, or a lock itself.
With no PATH, the colon-separated $LOCKCTL_PATH is used; if that is unset,
the standard places that exist: /run/lock, /var/lock, $XDG_RUNTIME_DIR and
the agmsg team directories under the home directory.

With --fix, gone locks are removed and abandoned breaks finished, each by a
claim-first rename bound to the holder that was judged (docs/fix-protocol.md);
where the file system cannot rename without replacing (NFS), a lock file is
claimed by link(2) instead, and a lock directory is kept. With --fix --via
CMD, a lock file judged gone on the host its record names is claimed here,
and removed only if that host judges the claimed record gone again; any
other answer, or none, puts it back. Nothing else is ever touched.

Exit status: 0 when no lock needs attention (after --fix, when none still
does), 1 when a lock has a verdict in the fail set (--fail-on), 2 on a usage
error, a PATH that cannot be read, or a directory under one that could not
be read in full, of the PATHs or $LOCKCTL_PATH named, unless
--allow-partial (the report is still written, and says what it does not
cover), or when the report cannot be written.`,
		OnUsageError: onUsage,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document (version 1)"},
			&cli.BoolFlag{Name: "json-lines", Usage: "print one JSON object per lock as it is judged, then a summary object (for trees too big to wait for)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress and no hints on stderr (errors still go there)"},
			formatFlag(),
			outputFlag(),
			&cli.BoolFlag{Name: "fix", Usage: "remove gone locks and finish abandoned breaks, each bound to the holder judged; touches nothing else"},
			&cli.DurationFlag{Name: "legacy-older-than", Usage: "with --fix, also remove owner-less locks unchanged for longer than `DUR` that no process holds (local file systems only)"},
			&cli.StringSliceFlag{Name: "name", Usage: "lock name `GLOB` (repeatable); replaces *.lock, *.lck and LCK..*"},
			&cli.StringFlag{Name: "fail-on", Usage: "comma-separated verdicts that make the exit status 1, or 'none'", Value: joinVerdicts(defaultFail)},
			&cli.BoolFlag{Name: "allow-partial", Usage: "exit by the locks found even when some directories could not be read (by default an incomplete look exits 2)"},
			&cli.StringFlag{Name: "only", Usage: "write out only the locks of these comma-separated `VERDICTS` (counts, the summary and the exit status still cover every lock)"},
			&cli.IntSliceFlag{Name: "not-a-holder", Usage: "vouch that the process `PID` (repeatable; bound to its start time now) holds none of these locks where its open files cannot be read (a pid 1 or a confined process that hides them even from root); never a recorded holder, never a lockctl, never the kernel's lock table; every verdict it completes says so"},
			&cli.StringFlag{Name: "via", Usage: "judge each foreign lock on the host its record names, by running `CMD` HOST lockctl judge (an argument vector split on blanks, as rsync -e does: 'ssh', 'ssh -p 2222', a wrapper script); with --fix, a lock file judged gone there is claimed here and removed only if that host judges the claimed record gone again"},
			&cli.DurationFlag{Name: "via-timeout", Value: 10 * time.Second, Usage: "with --via, how long to wait for each host's answer"},
			rootFlag, topFlag,
		},
		Action: doctorAction,
	}
}

func joinVerdicts(vs []verdict.Verdict) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ",")
}

func parseFailOn(s string) (map[verdict.Verdict]bool, error) {
	if strings.TrimSpace(s) == "none" {
		return map[verdict.Verdict]bool{}, nil
	}
	return parseVerdicts("--fail-on", s)
}

// parseVerdicts reads flag's comma-separated list of verdicts.
func parseVerdicts(flag, s string) (map[verdict.Verdict]bool, error) {
	or, orSay := "", ""
	if flag == "--fail-on" {
		or, orSay = ", or none", ", or say none"
	}
	set := map[verdict.Verdict]bool{}
	if strings.Trim(s, " ,") == "" {
		// An unset variable must not quietly turn the check off.
		return nil, usageErr("%s is empty: name verdicts (%s)%s", flag, joinVerdicts(verdict.All), orSay)
	}
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		v, ok := verdict.Parse(w)
		if !ok {
			return nil, usageErr("%s: %q is not a verdict (want a comma-separated list of %s%s)", flag, w, joinVerdicts(verdict.All), or)
		}
		set[v] = true
	}
	return set, nil
}

// defaultPaths are the places doctor looks when told nothing, and whether
// each was named by the operator (through $LOCKCTL_PATH), which makes a
// missing one an error rather than a place to skip.
func defaultPaths() (paths []string, named bool) {
	if env, ok := os.LookupEnv("LOCKCTL_PATH"); ok {
		for _, p := range strings.Split(env, ":") {
			if p != "" {
				paths = append(paths, p)
			}
		}
		return paths, true
	}
	paths = []string{"/run/lock", "/var/lock"}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		paths = append(paths, x)
	}
	if home, err := os.UserHomeDir(); err == nil {
		for _, d := range []string{".agents", ".copilot", ".config/opencode", ".hermes", ".grok"} {
			paths = append(paths, filepath.Join(home, d, "skills/agmsg/teams"))
		}
	}
	return paths, false
}

// fixAgain is this doctor's command line with --fix: the same paths and
// name patterns, so that pasted as it is it judges the same locks.
func fixAgain(c *cli.Context) string {
	s := "lockctl doctor --fix"
	for _, n := range c.StringSlice("name") {
		s += " --name " + report.ShellQuote(n)
	}
	for _, p := range c.Args().Slice() {
		s += " " + report.ShellQuote(p)
	}
	return s
}

func doctorAction(c *cli.Context) error {
	d, err := newDoctorRun(c)
	if err != nil {
		return err
	}
	var tally *report.Tally
	var res doctor.Result
	if d.form.format == formatJSONLines {
		tally, res, err = d.stream(c.App.Writer)
	} else {
		tally, res, err = d.batch(c.App.Writer)
	}
	if err != nil {
		return &exitCode{code: ExitError, err: fmt.Errorf("cannot write the report: %w", err)}
	}
	if n := tally.Fixable; n > 0 && (d.form.format == formatText || d.form.format == formatTable) && d.opts.Fixer == nil && !d.quiet {
		fmt.Fprintf(c.App.ErrWriter, "lockctl: hint: %d gone %s: '%s' removes them safely, checking each holder again first\n", n, plural(n, "lock", "locks"), fixAgain(c))
	}
	total := 0
	for _, n := range tally.Counts {
		total += n
	}
	if total == 0 && d.root != "" && (d.form.format == formatText || d.form.format == formatTable) {
		fmt.Fprintf(c.App.Writer, "no lock occupies %s\n", d.root)
		return nil
	}
	if total == 0 && (d.form.format == formatText || d.form.format == formatTable) && !d.quiet && !res.BadRoot && len(res.NotLocks) == 0 {
		// (Data files named like locks were found: the names matched,
		// and the summary says what they are.)
		names := "the default names (" + strings.Join(scan.DefaultNames, ", ") + ", and the known producers' lock files)"
		if c.IsSet("name") {
			names = strings.Join(c.StringSlice("name"), ", ")
		}
		fmt.Fprintf(c.App.ErrWriter, "lockctl: hint: looked in %s for %s; locks by other names need --name PATTERN (for example --name '*.pid')\n", quoteAll(d.opts.Paths), names)
	}
	switch {
	case res.BadRoot && res.Denied:
		return &exitCode{code: ExitError, hint: "permission denied: run lockctl as the registry's owner, or as root (sudo lockctl doctor ...), to read it"}
	case res.BadRoot:
		return &exitCode{code: ExitError, hint: "check the path, or set LOCKCTL_PATH to the registries to check"}
	case len(res.Unread) > 0 && d.opts.Named && !c.Bool("allow-partial"):
		// A health check must not pass over a registry it never saw. The
		// default places are another matter: $XDG_RUNTIME_DIR holds
		// systemd's inaccessible/ placeholders on every desktop, and the
		// summary still says what was not read.
		hint := "the report does not cover them: run lockctl as their owner or as root, or pass --allow-partial to accept a partial look"
		if tally.Attention {
			hint = "locks need attention, and " + hint
		}
		return &exitCode{code: ExitError, hint: hint}
	case tally.Attention:
		return &exitCode{code: ExitAttention}
	}
	return nil
}

// doctorRun is one lockctl doctor, its flags read.
type doctorRun struct {
	opts  doctor.Options
	form  reportForm
	fail  map[verdict.Verdict]bool
	only  map[verdict.Verdict]bool // --only: nil writes every lock
	now   time.Time
	quiet bool
	root  string // --root: the root whose keyed lock alone is judged
	via   *remote.Via
}

// newDoctorRun turns doctor's flags into the options of doctor.Run.
func newDoctorRun(c *cli.Context) (*doctorRun, error) {
	d := &doctorRun{now: time.Now(), quiet: c.Bool("quiet")}
	var err error
	if d.fail, err = parseFailOn(c.String("fail-on")); err != nil {
		return nil, err
	}
	if c.IsSet("only") {
		if d.only, err = parseVerdicts("--only", c.String("only")); err != nil {
			return nil, err
		}
	}
	if d.form, err = parseReportForm(c); err != nil {
		return nil, err
	}
	names := c.StringSlice("name")
	if c.IsSet("root") {
		// The one keyed lock of that root, with what lies beside it.
		if c.NArg() > 0 || c.IsSet("name") {
			return nil, usageErr("doctor --root judges that root's lock alone: leave out PATHs and --name")
		}
		root, path, err := keyedLock(c)
		if err != nil {
			return nil, err
		}
		d.root = root
		names = []string{filepath.Base(path)}
		d.opts.Paths, d.opts.Named = []string{filepath.Dir(path)}, true
	}
	if d.opts.Match, err = scan.NewMatcher(names); err != nil {
		return nil, usageErr("%v", err)
	}
	legacy := c.Duration("legacy-older-than")
	if legacy != 0 && !c.Bool("fix") {
		return nil, usageErr("--legacy-older-than only makes sense with --fix")
	}
	if legacy < 0 || c.IsSet("legacy-older-than") && legacy == 0 {
		return nil, usageErr("--legacy-older-than must be positive (a duration such as 1h)")
	}
	if d.root == "" {
		d.opts.Paths, d.opts.Named = c.Args().Slice(), true
	}
	if len(d.opts.Paths) == 0 {
		d.opts.Paths, d.opts.Named = defaultPaths()
	}
	vouched, err := d.setJudges(c)
	if err != nil {
		return nil, err
	}
	// Reading directories waits on the disk as much as on the CPU: a few
	// more walkers than cores keep both busy.
	d.opts.Workers = 2 * runtime.GOMAXPROCS(0)
	stderr := c.App.ErrWriter
	d.opts.Warn = func(err error, skipped bool) {
		suffix := ""
		if skipped {
			suffix = " (skipped)"
		}
		fmt.Fprintf(stderr, "lockctl: %s%s\n", report.Clean(err.Error()), suffix)
	}
	if c.Bool("fix") {
		sweep := judges.Sweep(d.opts.Host)
		judges.Vouch(sweep, vouched)
		d.opts.Fixer = fix.New(sweep)
		d.opts.Fixer.Hook = fixHook(stderr)
		d.opts.Fixer.LegacyOlderThan = legacy
		if d.via != nil {
			d.opts.Fixer.Rejudge, d.via.Fixing = d.via.Rejudge, true
		}
		d.opts.Conflict = func(res verdict.Result, o fix.Outcome) {
			fmt.Fprintf(stderr, "lockctl: conflict at %s: %s\n", report.ShellQuote(res.Lock.Path), report.Clean(o.Reason))
		}
	}
	if !d.quiet && d.form.format != formatJSON && d.form.format != formatJSONLines {
		d.opts.Progress = func(entries, found, judged *atomic.Int64) func() {
			return startProgress(stderr, true, entries, found, judged)
		}
	}
	return d, nil
}

// setJudges gives the run its judge, its --not-a-holder vouches (returned,
// for the fixer's judge too) and its --via.
func (d *doctorRun) setJudges(c *cli.Context) (vouched map[int]uint64, err error) {
	d.opts.Host = judges.Host()
	d.opts.Judge = judges.Doctor(d.opts.Host, c.Bool("fix"))
	if vouched, err = judges.NotAHolder(c.IntSlice("not-a-holder")); err != nil {
		return nil, &exitCode{code: ExitError, err: err, hint: "vouch only for a running process you know holds none of these locks"}
	}
	judges.Vouch(d.opts.Judge, vouched)
	d.opts.Detail = judges.Detail
	if d.via, err = viaOf(c, d.quiet); d.via != nil {
		d.opts.Via = d.via.Judge
	}
	return vouched, err
}

// stream runs doctor writing each lock as it is judged (--json-lines):
// nothing is held but counts.
func (d *doctorRun) stream(stdout io.Writer) (tally *report.Tally, res doctor.Result, err error) {
	write := func(out io.Writer) error {
		lw := report.NewLineWriter(out, d.now, d.fail, d.opts.Fixer != nil)
		lw.Only = d.only
		res, tally = doctor.Run(d.opts, lw), lw.Tally()
		return lw.Summary(d.opts.Host, res.Errors, res.Unread, report.NotLocks(res.NotLocks))
	}
	if d.form.output != "" {
		err = writeFileAtomic(d.form.output, write)
	} else {
		err = write(stdout)
	}
	return tally, res, err
}

// batch runs doctor, then sorts and writes the whole report.
func (d *doctorRun) batch(stdout io.Writer) (*report.Tally, doctor.Result, error) {
	// A batch report keeps every lock until the walk ends: a soft limit
	// on the heap (unless GOMEMLIMIT sets one) makes the collector work
	// harder only as it nears it, which keeps a 20,000-lock report under
	// 64 MiB resident (docs/performance.md).
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(batchHeapLimit)
	}
	rep := &report.Report{Host: d.opts.Host, Now: d.now, Fail: d.fail, Only: d.only}
	if d.opts.Fixer != nil {
		rep.Outcomes = map[*scan.Lock]fix.Outcome{}
	}
	if d.form.format == formatJSON {
		rep.EncodeAhead() // each lock's JSON encoded beside the walk
	}
	res := doctor.Run(d.opts, rep)
	rep.Errors, rep.Unread, rep.NotLocks = res.Errors, res.Unread, report.NotLocks(res.NotLocks)
	rep.Sort()
	return rep.Tally(), res, d.form.write(stdout, rep)
}

// batchHeapLimit is the batch report's soft heap limit: the runtime's own
// memory, goroutine stacks and the binary come on top of it.
const batchHeapLimit = 58 << 20

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// quoteAll lists paths, each quoted for a shell.
func quoteAll(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = report.ShellQuote(p)
	}
	return strings.Join(q, ", ")
}

// viaOf reads --via and --via-timeout: the judge of foreign locks on their
// own hosts, or nil.
func viaOf(c *cli.Context, quiet bool) (*remote.Via, error) {
	via := strings.Fields(c.String("via"))
	switch t := c.Duration("via-timeout"); {
	case len(via) == 0 && c.IsSet("via"):
		return nil, usageErr("--via: give the command to reach a host (ssh, or a wrapper)")
	case len(via) == 0:
		return nil, nil
	case t <= 0:
		return nil, usageErr("--via-timeout %s: want a positive duration", t)
	default:
		v := &remote.Via{Command: via, Timeout: t}
		if !quiet {
			stderr := c.App.ErrWriter
			v.Asking = func(hosts []string) {
				fmt.Fprintf(stderr, "lockctl: asking %s through %s: %s\n", plural(len(hosts), "1 host", fmt.Sprintf("%d hosts", len(hosts))), report.Clean(strings.Join(via, " ")), strings.Join(hosts, ", "))
			}
		}
		return v, nil
	}
}

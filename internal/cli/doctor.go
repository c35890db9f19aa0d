package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockctl/lockctl/fix"
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
		Usage:     "judge every lock in the given registries and say what to remove (removes nothing)",
		ArgsUsage: "[PATH...]",
		Description: `Each PATH is a registry directory, walked recursively, or a lock itself.
With no PATH, the colon-separated $LOCKCTL_PATH is used; if that is unset,
the standard places that exist: /run/lock, /var/lock, $XDG_RUNTIME_DIR and
the agmsg team directories under the home directory.

With --fix, gone locks are removed and abandoned breaks finished, each by a
claim-first rename bound to the holder that was judged (docs/fix-protocol.md).
Nothing else is ever touched.

Exit status: 0 when no lock needs attention (after --fix, when none still
does), 1 when a lock has a verdict in the fail set (--fail-on), 2 on a usage
error or a PATH that cannot be read (the report is still written), or when
the report cannot be written.`,
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
	set := map[verdict.Verdict]bool{}
	if strings.TrimSpace(s) == "none" {
		return set, nil
	}
	if strings.Trim(s, " ,") == "" {
		// An unset variable must not quietly turn the check off.
		return nil, usageErr("--fail-on is empty: name verdicts (%s), or say none", joinVerdicts(verdict.All))
	}
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		v, ok := verdict.Parse(w)
		if !ok {
			return nil, usageErr("--fail-on: %q is not a verdict (want a comma-separated list of %s, or none)", w, joinVerdicts(verdict.All))
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

func doctorAction(c *cli.Context) error {
	fail, err := parseFailOn(c.String("fail-on"))
	if err != nil {
		return err
	}
	form, err := parseReportForm(c)
	if err != nil {
		return err
	}
	m, err := scan.NewMatcher(c.StringSlice("name"))
	if err != nil {
		return usageErr("%v", err)
	}
	paths, named := c.Args().Slice(), true
	if len(paths) == 0 {
		paths, named = defaultPaths()
	}
	stderr := c.App.ErrWriter
	rep := &report.Report{Host: verdict.LocalHost(), Now: time.Now(), Fail: fail}
	legacy := c.Duration("legacy-older-than")
	if legacy != 0 && !c.Bool("fix") {
		return usageErr("--legacy-older-than only makes sense with --fix")
	}
	if legacy < 0 || c.IsSet("legacy-older-than") && legacy == 0 {
		return usageErr("--legacy-older-than must be positive (a duration such as 1h)")
	}
	judge := verdict.Judge{Host: rep.Host, Probe: &verdict.CachingProbe{Next: verdict.KernelProbe{}}, Evidence: &verdict.KernelEvidence{}}
	note := func(err error, suffix string) {
		msg := report.Clean(err.Error())
		rep.Errors = append(rep.Errors, msg)
		fmt.Fprintf(stderr, "lockctl: %s%s\n", msg, suffix)
	}
	warn := func(err error) { note(err, " (skipped)") }

	var roots []scan.Root
	badRoot := false
	for _, p := range paths {
		r, err := scan.ResolveRoot(p, m)
		if err != nil {
			if named {
				badRoot = true
				note(fmt.Errorf("cannot read %s: %w", report.ShellQuote(p), unwrapPath(err)), "")
			}
			continue
		}
		dup := false
		for _, o := range roots {
			dup = dup || o.Same(r)
		}
		if !dup {
			roots = append(roots, r)
		}
	}
	var fixer *fix.Fixer
	if c.Bool("fix") {
		fixer = fix.New(rep.Host)
		fixer.Hook = fixHook(stderr)
		fixer.LegacyOlderThan = legacy
		rep.Outcomes = map[*scan.Lock]fix.Outcome{}
	}
	act := func(res verdict.Result) fix.Outcome {
		o := fixer.Fix(res)
		if n := fixer.Debris(res); n > 0 {
			o.Reason += fmt.Sprintf("; removed %d abandoned %s beside it", n, plural(n, "build", "builds"))
		}
		if o.Conflict != "" {
			fmt.Fprintf(stderr, "lockctl: conflict at %s: %s\n", report.ShellQuote(res.Lock.Path), report.Clean(o.Reason))
		}
		return o
	}
	quiet := c.Bool("quiet")
	var found, judged atomic.Int64
	// handle receives each lock once, judged, in walk order.
	var handle func(verdict.Result)
	seen := map[string]bool{}
	w := scan.Walker{
		Match: m,
		Warn:  warn,
		// Reading directories waits on the disk as much as on the CPU: a
		// few more walkers than cores keep both busy.
		Workers: 2 * runtime.GOMAXPROCS(0),
		Found: func(l *scan.Lock) {
			found.Add(1)
			if !seen[l.Path] {
				seen[l.Path] = true
				handle(judge.Judge(l))
				judged.Add(1)
			}
		},
	}
	walk := func() {
		stop := startProgress(stderr, !quiet && form.format != formatJSON && form.format != formatJSONLines, &w.Entries, &found, &judged)
		defer stop()
		for _, r := range roots {
			if err := w.Walk(r); err != nil {
				badRoot = badRoot || named
				note(fmt.Errorf("cannot read %s: %w", report.ShellQuote(r.Path), unwrapPath(err)), "")
			}
		}
	}

	var attention bool
	var counts map[verdict.Verdict]int
	if form.format == formatJSONLines {
		// Stream: each lock is written (and, with --fix, acted on) as soon
		// as it is judged; nothing is held but counts.
		var lw *report.LineWriter
		stream := func(out io.Writer) error {
			lw = report.NewLineWriter(out, rep.Now, fail, fixer != nil)
			handle = func(res verdict.Result) {
				if fixer == nil {
					lw.Lock(res, nil)
					return
				}
				o := act(res)
				lw.Lock(res, &o)
			}
			walk()
			return lw.Summary(rep.Host, rep.Errors)
		}
		if form.output != "" {
			err = writeFileAtomic(form.output, stream)
		} else {
			err = stream(c.App.Writer)
		}
		if err != nil {
			return &exitCode{code: ExitError, err: fmt.Errorf("cannot write the report: %w", err)}
		}
		attention, counts = lw.NeedsAttention(), lw.Counts()
	} else {
		handle = func(res verdict.Result) { rep.Results = append(rep.Results, res) }
		walk()
		if fixer != nil {
			for _, res := range rep.Results {
				rep.Outcomes[res.Lock] = act(res)
			}
		}
		rep.Sort()
		if err := form.write(c.App.Writer, rep); err != nil {
			return &exitCode{code: ExitError, err: fmt.Errorf("cannot write the report: %w", err)}
		}
		attention, counts = rep.NeedsAttention(), rep.Counts()
	}
	if n := counts[verdict.Gone]; n > 0 && form.format == formatText && fixer == nil && !quiet {
		fmt.Fprintf(stderr, "lockctl: hint: %d gone %s: 'lockctl doctor --fix' removes them safely, checking each holder again first\n", n, plural(n, "lock", "locks"))
	}
	switch {
	case badRoot:
		return &exitCode{code: ExitError, hint: "check the path, or set LOCKCTL_PATH to the registries to check"}
	case attention:
		return &exitCode{code: ExitAttention}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// unwrapPath drops the *fs.PathError wrapper, whose path the message
// already names, quoted.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

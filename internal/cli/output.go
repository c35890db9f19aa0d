package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/report"
	"github.com/urfave/cli/v2"
)

// The report formats of doctor --format.
const (
	formatText      = "text"       // for people: styled on a terminal, plain elsewhere
	formatJSON      = "json"       // one versioned JSON document (the same as --json)
	formatJSONLines = "json-lines" // one JSON object per lock as it is judged, then a summary
	formatProm      = "prom"       // Prometheus text exposition, for node_exporter's textfile collector
	formatTable     = "table"      // one line per lock, lslocks-style
)

var formats = []string{formatText, formatTable, formatJSON, formatJSONLines, formatProm}

func formatFlag() cli.Flag {
	return &cli.StringFlag{Name: "format", Value: formatText,
		Usage: "write the report as `FORMAT`: text, table (one line per lock), json (the same as --json), json-lines (the same as --json-lines) or prom (Prometheus text format, for node_exporter's textfile collector)"}
}

func outputFlag() cli.Flag {
	return &cli.StringFlag{Name: "output", TakesFile: true,
		Usage: "write the report to `FILE` instead of stdout, replacing it atomically: a reader sees the old file or the new one, never a part"}
}

// reportForm is how doctor writes its report: in which format, and where
// ("" is the command's stdout).
type reportForm struct {
	format string
	output string
}

// parseReportForm reads --format, --json and --output. --json is --format
// json; given with a --format that says otherwise, it is a usage error.
func parseReportForm(c *cli.Context) (reportForm, error) {
	f := reportForm{format: c.String("format"), output: c.String("output")}
	if !slices.Contains(formats, f.format) {
		return f, usageErr("--format: %q is not a format (want text, table, json, json-lines or prom)", f.format)
	}
	for _, alias := range []string{formatJSON, formatJSONLines} {
		if !c.Bool(alias) {
			continue
		}
		if c.IsSet("format") && f.format != alias || f.format != formatText && f.format != alias {
			return f, usageErr("--%s and --format %s disagree: --%s is --format %s, give one of them", alias, f.format, alias, alias)
		}
		f.format = alias
	}
	if c.IsSet("output") && f.output == "" {
		return f, usageErr("--output is empty: name the file to write")
	}
	return f, nil
}

// write renders rep in f's format to stdout, or atomically to f.output.
// The scan's duration, for the prom format, runs from rep.Now until now.
func (f reportForm) write(stdout io.Writer, rep *report.Report) error {
	render := func(w io.Writer) error {
		switch f.format {
		case formatJSON:
			return report.WriteJSON(w, rep)
		case formatProm:
			return report.WritePrometheus(w, rep, time.Since(rep.Now))
		case formatTable:
			return report.WriteTable(w, rep, report.NewStyles(w))
		}
		// Styles bound to w: a file gets plain text even from a terminal.
		return report.WriteText(w, rep, report.NewStyles(w))
	}
	if f.output == "" {
		return render(stdout)
	}
	return writeFileAtomic(f.output, render)
}

// writeFileAtomic is fsx.WriteFileAtomic, its errors naming their paths
// quoted for the shell.
func writeFileAtomic(path string, render func(io.Writer) error) error {
	err := fsx.WriteFileAtomic(path, render)
	var we *fsx.WriteError
	switch {
	case !errors.As(err, &we):
		return err
	case errors.Is(we.Err, fsx.ErrNotRegular):
		return fmt.Errorf("cannot write %s: it is not a regular file, and --output replaces the file at its path; leave --output out and redirect standard output instead (> %s)", report.ShellQuote(we.Path), report.ShellQuote(we.Path))
	case we.Op == "rename":
		return fmt.Errorf("cannot rename %s to %s: %w", report.ShellQuote(we.From), report.ShellQuote(we.Path), we.Err)
	}
	return fmt.Errorf("cannot %s %s: %w", we.Op, report.ShellQuote(we.Path), we.Err)
}

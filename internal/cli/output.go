package cli

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockctl/lockctl/report"
	"github.com/urfave/cli/v2"
)

// The report formats of doctor --format.
const (
	formatText      = "text"       // for people: styled on a terminal, plain elsewhere
	formatJSON      = "json"       // one versioned JSON document (the same as --json)
	formatJSONLines = "json-lines" // one JSON object per lock as it is judged, then a summary
	formatProm      = "prom"       // Prometheus text exposition, for node_exporter's textfile collector
)

var formats = []string{formatText, formatJSON, formatJSONLines, formatProm}

func formatFlag() cli.Flag {
	return &cli.StringFlag{Name: "format", Value: formatText,
		Usage: "write the report as `FORMAT`: text, json (the same as --json), json-lines (the same as --json-lines) or prom (Prometheus text format, for node_exporter's textfile collector)"}
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
		return f, usageErr("--format: %q is not a format (want text, json, json-lines or prom)", f.format)
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
		}
		// Styles bound to w: a file gets plain text even from a terminal.
		return report.WriteText(w, rep, report.NewStyles(w))
	}
	if f.output == "" {
		return render(stdout)
	}
	return writeFileAtomic(f.output, render)
}

// writeFileAtomic writes what render produces to path so that a reader of
// path sees the whole previous file or the whole new one, never a part, and
// never an empty file.
//
// render writes to a new temporary file in path's directory, created with
// O_EXCL (so it is never someone else's file) and named ".<base>.tmp-<hex>",
// which matches no "*.prom" glob: node_exporter's textfile collector never
// reads it. The file is flushed, fsynced and closed, then renamed over path;
// the directory is then fsynced, as far as the file system allows. On any
// error before the rename, the temporary file is removed and path is left
// as it was.
//
// The new file gets mode 0666 less the umask, as a shell redirection would;
// path's old mode and owner are not kept, and if path is a symbolic link,
// the link itself is replaced. Two runs writing the same path at once each
// publish a complete file; the later rename wins. A process killed (SIGKILL)
// between creating the temporary file and the rename leaves it behind;
// nothing else does.
func writeFileAtomic(path string, render func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, tmp, err := createExclusive(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("cannot create a temporary file in %s: %w", report.ShellQuote(dir), unwrapPath(err))
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	// Errors name path, the file being written: the temporary file is gone
	// by the time anyone reads the message.
	if err := render(bw); err != nil {
		return fmt.Errorf("cannot write %s: %w", report.ShellQuote(path), unwrapPath(err))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cannot write %s: %w", report.ShellQuote(path), unwrapPath(err))
	}
	// The order is the argument: the bytes are on disk before the rename
	// publishes them, so a crash cannot leave path renamed but empty.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot sync %s: %w", report.ShellQuote(path), unwrapPath(err))
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", report.ShellQuote(path), unwrapPath(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot rename %s to %s: %w", report.ShellQuote(tmp), report.ShellQuote(path), linkErr(err))
	}
	// Make the rename itself durable. Some file systems cannot sync a
	// directory; the file is in place either way, so this is best effort.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// createExclusive creates a new file dir/prefix<random hex> with O_EXCL,
// retrying with another name if one exists.
func createExclusive(dir, prefix string) (*os.File, string, error) {
	var b [6]byte
	for try := 0; ; try++ {
		rand.Read(b[:])
		name := filepath.Join(dir, prefix+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, name, err
	}
}

// linkErr drops the *os.LinkError wrapper, whose paths the message already
// names, quoted.
func linkErr(err error) error {
	if le, ok := err.(*os.LinkError); ok {
		return le.Err
	}
	return err
}

package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/report"
	"github.com/lockctl/lockctl/verdict"
)

// Via asks the hosts that recorded foreign locks to judge them, through
// the command the operator names (--via): Command HOST lockctl judge, run
// as an argument vector, never through a shell, the request on its
// standard input.
type Via struct {
	// Command is the --via command, split on blanks as rsync -e splits
	// its: "ssh", "ssh -p 2222", or a wrapper script.
	Command []string
	// Timeout bounds each host's answer (--via-timeout).
	Timeout time.Duration
	// Asking, when not nil, is told which hosts are asked, before they
	// are (doctor's progress on stderr).
	Asking func(hosts []string)
	// Fixing says doctor runs with --fix, which acts on a gone lock here
	// (Rejudge): its notes then do not send the operator to its host.
	Fixing bool

	mu  sync.Mutex
	ids map[string]identity // each host's machine and boot id, from its first answer
}

// ExitUnreachable is ssh's exit status when it cannot reach the host.
const ExitUnreachable = 255

// Judge judges the foreign results on their own hosts, each host asked
// once, all at once, and returns them: each one a host answered for
// carries that host's verdict (Remote set to it); the others stay foreign,
// with a note saying why.
func (v *Via) Judge(results []verdict.Result) []verdict.Result {
	byHost := map[string][]int{}
	var hosts []string
	for i := range results {
		r := &results[i]
		if r.Verdict != verdict.Foreign {
			continue
		}
		host, why := hostOf(r)
		if why != "" {
			r.Notes = append(r.Notes, "not asked through --via: "+why)
			continue
		}
		if _, ok := byHost[host]; !ok {
			hosts = append(hosts, host)
		}
		byHost[host] = append(byHost[host], i)
	}
	if v.Asking != nil && len(hosts) > 0 {
		v.Asking(hosts)
	}
	var wg sync.WaitGroup
	for _, host := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.ask(host, results, byHost[host])
		}()
	}
	wg.Wait()
	return results
}

// hostOf is the host a foreign result's record names, or why it is not
// asked.
func hostOf(r *verdict.Result) (host, why string) {
	h := r.Holder
	switch {
	case h == nil || h.Host == "":
		return "", "the record names no host"
	case h.HostAddr:
		return "", fmt.Sprintf("the record names an address (%s), not a host name", h.Host)
	case !ValidHost(h.Host):
		return "", fmt.Sprintf("the record's host %q is not a host name (letters, digits, dots and hyphens, not starting with -), so it is never passed to a command", h.Host)
	case len(r.Lock.Holders) == 0:
		return "", "no record bytes were read"
	}
	return h.Host, ""
}

// ask asks host about results[idx...] and applies its answer.
func (v *Via) ask(host string, results []verdict.Result, idx []int) {
	req := Request{Version: Version}
	for _, i := range idx {
		l := results[i].Lock
		req.Records = append(req.Records, Record{Path: l.Path, Format: string(l.Format), Bytes: string(l.Holders[0].Raw)})
	}
	a, err := v.call(host, &req)
	if err == nil {
		err = check(a, host, req.Records)
	}
	if err == nil {
		v.remember(host, a)
	}
	cmd := strings.Join(v.Command, " ")
	for n, i := range idx {
		r := &results[i]
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("asked host %s through %s: %s; it stays foreign", host, cmd, report.Clean(err.Error())))
			continue
		}
		j := a.Judged[n]
		r.Verdict = verdict.Verdict(j.Verdict)
		r.Reason = fmt.Sprintf("judged on host %s (through %s): %s", host, cmd, report.Clean(j.Reason))
		r.Remove, r.Caveat, r.Facts = nil, "", nil
		r.Remote = host
		r.Notes = nil
		for _, note := range j.Notes {
			r.Notes = append(r.Notes, "on "+host+": "+report.Clean(note))
		}
		if r.Verdict == verdict.Gone && !v.Fixing {
			r.Notes = append(r.Notes, fmt.Sprintf("remove it on %s, where it is judged: lockctl doctor --fix %s", host, r.Lock.Path))
		}
	}
}

// call runs the --via command for host with the request, and reads its
// answer.
func (v *Via) call(host string, req *Request) (*Answer, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), v.Timeout)
	defer cancel()
	args := append(append(slices.Clone(v.Command[1:]), host), "lockctl", "judge")
	c := exec.CommandContext(ctx, v.Command[0], args...)
	c.Stdin = bytes.NewReader(body)
	var out, errOut limited
	out.max, errOut.max = MaxAnswer, 4096
	c.Stdout, c.Stderr = &out, &errOut
	c.WaitDelay = time.Second
	err = c.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("no answer within %s (--via-timeout)", v.Timeout)
	case errors.As(err, &ee) && ee.ExitCode() == ExitUnreachable:
		return nil, fmt.Errorf("the host cannot be reached (exit %d)%s", ExitUnreachable, firstLine(errOut.String()))
	case err != nil:
		return nil, fmt.Errorf("%v%s", err, firstLine(errOut.String()))
	case out.over:
		return nil, fmt.Errorf("%w: it is larger than %d bytes", errAnswer, MaxAnswer)
	}
	var a Answer
	if err := json.Unmarshal(out.Bytes(), &a); err != nil {
		return nil, fmt.Errorf("%w: it is not lockctl judge's JSON (%v)", errAnswer, err)
	}
	return &a, nil
}

// check takes an answer only from the host the records name, judging
// exactly the records sent, with verdicts lockctl knows.
func check(a *Answer, host string, recs []Record) error {
	switch {
	case a.Version != Version:
		return fmt.Errorf("%w: it is version %d, not %d", errAnswer, a.Version, Version)
	case !strings.EqualFold(a.Host, host):
		return fmt.Errorf("%w: it comes from host %q, not %s, which the record names", errAnswer, a.Host, host)
	case len(a.Judged) != len(recs):
		return fmt.Errorf("%w: it judges %d records, not the %d sent", errAnswer, len(a.Judged), len(recs))
	}
	for i, j := range a.Judged {
		if j.Path != recs[i].Path {
			return fmt.Errorf("%w: it judges %q where %q was sent", errAnswer, j.Path, recs[i].Path)
		}
		if !slices.Contains(verdict.All, verdict.Verdict(j.Verdict)) {
			return fmt.Errorf("%w: its verdict %q is not one lockctl knows", errAnswer, j.Verdict)
		}
	}
	return nil
}

// limited is a buffer that keeps at most max bytes and says whether more
// came.
type limited struct {
	bytes.Buffer
	max  int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	n := len(p)
	if room := l.max - l.Len(); n > room {
		l.over = true
		p = p[:max(room, 0)]
	}
	l.Buffer.Write(p)
	return n, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return ""
	}
	return ": " + s
}

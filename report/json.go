package report

// The JSON document of doctor --json (docs/verdicts.md): its shapes, and
// how a report is written as one.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/verdict"
)

// JSON shapes: see docs/verdicts.md. Field names are part of version 1.
type jsonDoc struct {
	Version int        `json:"version"`
	Host    string     `json:"host"`
	BootID  string     `json:"boot_id"`
	Time    string     `json:"time"`
	Locks   []jsonLock `json:"locks"`
	// NotLocks are the data files named like locks: never judged.
	NotLocks []NotLock               `json:"not_locks"`
	Counts   map[verdict.Verdict]int `json:"counts"`
	Actions  map[fix.Action]int      `json:"actions,omitempty"`
	Errors   []string                `json:"errors"`
	// Complete is false when some directories were not read (Unread), or
	// a named path, or anything else, could not be read (Errors).
	Complete bool     `json:"complete"`
	Unread   []Unread `json:"unread"`
}

type jsonLock struct {
	Path string `json:"path"`
	// PathShell is the path quoted for a shell, byte-exact, present only
	// when the path is not valid UTF-8 (which JSON strings cannot carry).
	PathShell string `json:"path_shell,omitempty"`
	Kind      string `json:"kind"`
	Format    string `json:"format"`
	// Producer names the program whose lock it is, where lockctl knows it
	// (git, postgresql, ...): so a fleet can count wedged git locks apart.
	Producer   string      `json:"producer,omitempty"`
	Verdict    string      `json:"verdict"`
	Reason     string      `json:"reason"`
	Holder     *jsonHolder `json:"holder"`
	Modified   string      `json:"modified,omitempty"`
	AgeSeconds *int64      `json:"age_seconds"`
	Remove     []string    `json:"remove"`
	// Fix is the command that removes the lock safely (gone locks and
	// abandoned claims); Remove is then the last resort.
	Fix    string   `json:"fix,omitempty"`
	Caveat string   `json:"caveat,omitempty"`
	Notes  []string `json:"notes,omitempty"`
	// Premises are what a gone verdict rests on, each with its source and
	// whether that source covered the holder from this reader's view (an
	// unknown one names the premise that was not proved): issue 28.
	Premises []jsonPremise `json:"premises,omitempty"`
	// Waiters are the requests the kernel shows blocked behind the lock.
	Waiters []jsonHolder `json:"waiters,omitempty"`
	// Temps are its producer's temporary files found with it (GnuPG's
	// .#lk*, shadow's <database>.<pid>, an X server's .tX<n>-lock).
	Temps []jsonTemp `json:"temps,omitempty"`
	// Set by --fix only.
	Action       string `json:"action,omitempty"`
	ActionReason string `json:"action_reason,omitempty"`
	Conflict     string `json:"conflict,omitempty"`
}

// jsonTemp is a producer's temporary file (verdict.TempState): the pid
// its name or bytes carry, and whether that pid runs ("gone", "running",
// "unknown", with why).
type jsonTemp struct {
	Name  string `json:"name"`
	Pid   int64  `json:"pid"`
	Host  string `json:"host,omitempty"`
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
}

// jsonPremise is one premise of a gone verdict (verdict.Fact).
type jsonPremise struct {
	Premise string `json:"premise"`
	Source  string `json:"source"`
	Covered bool   `json:"covered"`
	Gap     string `json:"gap,omitempty"`
}

type jsonHolder struct {
	Pid        int64   `json:"pid"`
	Host       string  `json:"host,omitempty"`
	Command    string  `json:"command,omitempty"`
	Token      string  `json:"token,omitempty"`
	Start      string  `json:"start,omitempty"`
	StartTicks *uint64 `json:"start_ticks,omitempty"`
	// LockType and LockMode describe the kernel lock the holder has on the
	// lock, where the kernel shows one: FLOCK, POSIX, OFD or LEASE, and
	// READ or WRITE.
	LockType string `json:"lock_type,omitempty"`
	LockMode string `json:"lock_mode,omitempty"`
	// Cmdline, User, Uid and Started describe a live holder's process.
	Cmdline []string `json:"cmdline,omitempty"`
	User    string   `json:"user,omitempty"`
	Uid     *int     `json:"uid,omitempty"`
	Started string   `json:"started,omitempty"`
	// ReservedUntil is when a reservation (lockctl reserve) ends unless a
	// worker adopts it, estimated in wall time; the holder is its reserver.
	ReservedUntil string `json:"reserved_until,omitempty"`
	// Root is the repository root a keyed lock (--root) occupies.
	Root string `json:"root,omitempty"`
	// Slots is how many slots the counting lock (--slots) this lock is a
	// slot of has.
	Slots int `json:"slots,omitempty"`
}

// lockTypes are /proc/locks' names for each kind of kernel lock.
var lockTypes = map[string]string{"flock": "FLOCK", "POSIX lock": "POSIX", "OFD lock": "OFD", "lease": "LEASE"}

func kernelJSON(h verdict.KernelHolder) jsonHolder {
	return jsonHolder{Pid: int64(h.Pid), Command: h.Comm, LockType: lockTypes[h.How], LockMode: h.Mode}
}

func ageSeconds(now, t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	s := int64(math.Floor(now.Sub(t).Seconds()))
	return &s
}

// WriteJSON writes the report as one JSON document, the locks encoded and
// written one at a time: the whole document, encoded and then indented,
// used to be held in memory twice over (a hundred MiB at 20,000 locks). The
// bytes are those of encoding/json's indented form of jsonDoc.
func WriteJSON(w io.Writer, r *Report) error {
	doc := jsonDoc{
		Version:  Version,
		Host:     r.Host.Name,
		BootID:   r.Host.BootID,
		Time:     r.Now.UTC().Format(time.RFC3339),
		Locks:    []jsonLock{},
		NotLocks: append([]NotLock{}, r.NotLocks...),
		Counts:   r.Counts(),
		Errors:   append([]string{}, r.Errors...),
		Complete: len(r.Unread) == 0 && len(r.Errors) == 0,
		Unread:   append([]Unread{}, r.Unread...),
	}
	if r.Outcomes != nil {
		doc.Actions = r.Actions()
	}
	frame, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	const hole = "\n  \"locks\": []"
	head, tail, ok := bytes.Cut(frame, []byte(hole))
	if !ok {
		return fmt.Errorf("report: no place for the locks in %.40q", frame)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head)
	bw.WriteString("\n  \"locks\": [")
	n := 0
	put := func(b ...[]byte) {
		if n > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		for _, b := range b {
			bw.Write(b)
		}
		n++
	}
	if r.ahead != nil {
		r.ahead.finish(r)
		for _, e := range r.ahead.entries {
			put(e.json, e.shared, e.rest)
		}
	} else {
		r.encodeEach(func(b []byte) { put(b) })
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteByte(']')
	bw.Write(tail)
	bw.WriteByte('\n')
	return bw.Flush()
}

// encodeEach encodes r's shown locks, in order, handing put each one's
// JSON object.
func (r *Report) encodeEach(put func([]byte)) {
	var shown []*verdict.Result
	for i := range r.Results {
		if Shows(r.Only, r.Results[i].Verdict) {
			shown = append(shown, r.Results[i])
		}
	}
	// Encoded a batch at a time, on every CPU (encoding was a quarter of
	// doctor's time at 20,000 locks), and written in order.
	workers := runtime.GOMAXPROCS(0)
	const per = 128
	enc := make([][]byte, workers*per)
	for start := 0; start < len(shown); start += len(enc) {
		batch := shown[start:min(start+len(enc), len(shown))]
		var wg sync.WaitGroup
		for wk := 0; wk < workers; wk++ {
			wg.Add(1)
			go func(wk int) {
				defer wg.Done()
				for i := wk; i < len(batch); i += workers {
					res := batch[i]
					j := lockJSON(r.Now, *res)
					if o, ok := r.Outcomes[res.Lock]; ok {
						j.Action, j.ActionReason, j.Conflict = string(o.Action), o.Reason, o.Conflict
					}
					enc[i] = appendLockJSON(enc[i][:0], &j)
				}
			}(wk)
		}
		wg.Wait()
		for i := range batch {
			put(enc[i])
		}
	}
}

func lockJSON(now time.Time, res verdict.Result) jsonLock {
	l := res.Lock
	j := jsonLock{
		Path:       l.Path,
		Kind:       string(l.Kind),
		Format:     string(l.Format),
		Producer:   l.Producer,
		Verdict:    string(res.Verdict),
		Reason:     res.Reason,
		AgeSeconds: ageSeconds(now, res.Modified),
		Remove:     Commands(removal(res)),
		Fix:        FixCommand(res),
		Caveat:     res.Caveat,
		Notes:      res.Notes,
	}
	if len(res.Facts) > 0 {
		// Sized once: a gone lock has three or four, and grown one by one
		// they were three allocations a lock. None stays nil (omitted).
		j.Premises = make([]jsonPremise, 0, len(res.Facts))
	}
	for _, f := range res.Facts {
		j.Premises = append(j.Premises, jsonPremise{Premise: string(f.Premise), Source: f.Source, Covered: f.Covers(), Gap: f.Gap})
	}
	for _, t := range res.Temps {
		j.Temps = append(j.Temps, jsonTemp{Name: t.Temp.Name, Pid: t.Temp.Pid, Host: t.Temp.Host, State: t.Word(), Why: t.Why})
	}
	if !utf8.ValidString(l.Path) {
		j.PathShell = ShellQuote(l.Path)
	}
	if !res.Modified.IsZero() {
		j.Modified = res.Modified.UTC().Format(time.RFC3339)
	}
	if h := res.Holder; h != nil {
		jh := &jsonHolder{Pid: h.Pid, Host: h.Host, Command: h.Command, Token: h.Token, Root: h.Root, Slots: h.Slots}
		if !res.Started.IsZero() {
			jh.Start = res.Started.UTC().Format(time.RFC3339)
		}
		if h.HasStart {
			s := h.Start
			jh.StartTicks = &s
		}
		if k := res.Kernel; len(k) > 0 && int64(k[0].Pid) == h.Pid {
			jh.LockType, jh.LockMode = lockTypes[k[0].How], k[0].Mode
		}
		if !res.ReservedUntil.IsZero() {
			jh.ReservedUntil = res.ReservedUntil.UTC().Format(time.RFC3339Nano)
		}
		j.Holder = jh
	} else if k := res.Kernel; res.Verdict == verdict.Live && len(k) > 0 && k[0].Pid > 0 {
		jh := kernelJSON(k[0])
		j.Holder = &jh
	}
	if d := res.Detail; d != nil && j.Holder != nil {
		j.Holder.Cmdline, j.Holder.User = d.Cmdline, d.User
		if d.Uid >= 0 {
			uid := d.Uid
			j.Holder.Uid = &uid
		}
		j.Holder.Started = j.Holder.Start
	}
	for _, w := range res.Waiters {
		j.Waiters = append(j.Waiters, kernelJSON(w))
	}
	return j
}

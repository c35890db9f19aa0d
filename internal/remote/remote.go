// Package remote judges foreign locks on the host that recorded them:
// doctor --via CMD asks each such host, through the command the operator
// names (ssh, or a wrapper), to run lockctl judge on the records that name
// it, and takes its answer only when it comes from that host.
//
// The binding of an answer to its host is the transport the operator
// chose (ssh and its host keys): the answer's own claims are checked
// against the record (its host name, and machine id where the record
// carries one), never trusted alone. Anything else leaves the lock
// foreign, with the reason.
package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
)

// Version is the version of the request and answer.
const Version = 1

// MaxRequest bounds what lockctl judge reads from its standard input, and
// MaxAnswer what doctor reads back.
const (
	MaxRequest = 1 << 20
	MaxAnswer  = 1 << 20
	MaxRecords = 1000
)

// Request is what doctor sends to one host: the records that name it.
type Request struct {
	Version int      `json:"version"`
	Records []Record `json:"records"`
}

// Record is one lock as doctor read it: where, in which format, and its
// record's bytes.
type Record struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	Bytes  string `json:"bytes"`
	// Claim, when set, is a claim of the lock made by doctor --fix --via:
	// the record at Path renamed (or linked) to this path beside it, which
	// is judged as the lock's record (claimed.go).
	Claim string `json:"claim,omitempty"`
}

// Answer is what lockctl judge writes back: who it is, and a judgement per
// record, in the request's order.
type Answer struct {
	Version   int        `json:"version"`
	Host      string     `json:"host"`
	MachineID string     `json:"machine_id"`
	BootID    string     `json:"boot_id"`
	Judged    []Judgment `json:"judged"`
}

// Judgment is the verdict of one record on the host that judged it.
type Judgment struct {
	Path    string   `json:"path"`
	Verdict string   `json:"verdict"`
	Reason  string   `json:"reason"`
	Notes   []string `json:"notes,omitempty"`
	// Claim is the claim judged, as sent.
	Claim string `json:"claim,omitempty"`
}

// hostName is the strict pattern a record's host must match to be passed
// to the --via command: letters, digits, dots and hyphens, starting with a
// letter or digit (never "-", which ssh would read as an option).
var hostName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$`)

// ValidHost says whether host may be passed on to the --via command.
func ValidHost(host string) bool { return hostName.MatchString(host) }

// ReadRequest reads a request, at most MaxRequest bytes, refusing one that
// is larger, malformed, of another version, or of too many records.
func ReadRequest(r io.Reader) (*Request, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxRequest+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read the request: %w", err)
	}
	if len(b) > MaxRequest {
		return nil, fmt.Errorf("the request is larger than %d bytes", MaxRequest)
	}
	var req Request
	if err := json.Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("the request is not lockctl judge's JSON: %w", err)
	}
	switch {
	case req.Version != Version:
		return nil, fmt.Errorf("the request is version %d; this lockctl reads version %d", req.Version, Version)
	case len(req.Records) > MaxRecords:
		return nil, fmt.Errorf("the request holds %d records, more than %d", len(req.Records), MaxRecords)
	}
	return &req, nil
}

// errAnswer marks an answer that cannot be taken.
var errAnswer = errors.New("its answer cannot be taken")

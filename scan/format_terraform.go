package scan

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/fsx"
)

// ProducerTerraform is Terraform's local backend (and OpenTofu's), whose
// lock is a POSIX record lock on the state file, with what it says of its
// holder in .<state>.lock.info beside it.
const ProducerTerraform = "terraform"

// FormatTerraform is Terraform's lock info: its LockInfo as JSON.
const FormatTerraform Format = "terraform" // .terraform.tfstate.lock.info: LockInfo JSON

// Terraform is what a Terraform lock info file says, and the state file
// whose kernel lock is the lock itself.
type Terraform struct {
	// ID, Operation, Who (user@host) and Version are the LockInfo's.
	ID, Operation, Who, Version string
	// Created is when the lock was taken, by the LockInfo.
	Created time.Time
	// State is the state file's name in the lock's directory, and
	// StateInfo what it was when the lock was read; StateErr says why it
	// could not be looked at (fs.ErrNotExist: there is none).
	State     string
	StateInfo fsx.Stat
	StateErr  error
}

var formatTerraform = FormatSpec{
	Name:       "terraform",
	Formats:    []Format{FormatTerraform},
	Producer:   ProducerTerraform,
	Room:       "format_terraform.go",
	KnownNames: []string{".*.lock.info"},
	Parse:      func(b []byte) (*Holder, error) { h, _, err := ParseTerraform(b); return h, err },
	Fuzz:       []string{"scan:FuzzParseProducerRecord"},
	Rule:       "Terraform's local backend holds its lock as an fcntl F_SETLK write lock on the whole state file, taken and dropped with the state manager; the .lock.info beside it only describes the holder, and a later Terraform that gets the fcntl lock overwrites it.",
	Remedy:     "none: held while the kernel lists a lock on the state file; free otherwise (a lock info left by a killed Terraform is overwritten by the next one, which takes the lock by itself); never removed.",
	Source:     "terraform internal/states/statemgr/filesystem_lock_unix.go (lock, unlock), filesystem.go (Lock, lockInfoPath, writeLockInfo), locker.go (LockInfo, Marshal)",
	Verdicts:   []string{"live", "free", "unknown"},
	claims: func(l *Lock, r *Record) bool {
		return r.Holder == nil && strings.HasPrefix(l.Name, ".") && strings.HasSuffix(l.Name, ".lock.info") && len(l.Name) > len("..lock.info")
	},
	read: func(l *Lock, r *Record) {
		h, tf, err := ParseTerraform(r.Raw)
		if err != nil {
			return
		}
		tf.State = terraformState(l.Name, tf)
		if tf.State == "" {
			return
		}
		d, err := fsx.OpenDir(l.Dir)
		if err == nil {
			tf.StateInfo, tf.StateErr = d.Lstat(tf.State)
			d.Close()
		} else {
			tf.StateErr = err
		}
		l.Format, l.Producer, l.Terraform = FormatTerraform, ProducerTerraform, tf
		r.Holder, r.Err = h, nil
	},
}

// terraformState is the state file whose lock info is name: lockInfoPath
// makes ".<state, less one leading dot>.lock.info" in the state's
// directory, and the LockInfo's Path names the state. It is "" when
// Path's base name does not give back name.
func terraformState(name string, tf *Terraform) string {
	state := tf.State
	if state == "" || state == "." || state == "/" {
		return ""
	}
	if "."+strings.TrimPrefix(state, ".")+".lock.info" != name {
		return ""
	}
	return state
}

type terraformJSON struct {
	ID, Operation, Info, Who, Version string
	Created                           time.Time
	Path                              string
}

// ParseTerraform parses a Terraform lock info file: statemgr.LockInfo
// marshalled by json.Marshal (locker.go, Marshal), one object with the
// keys ID, Operation, Info, Who ("user@host", NewLockInfo), Version,
// Created (RFC 3339) and Path (the state file, set by writeLockInfo), and
// nothing else. Its Holder names Who's user and host and no pid: the
// holder is whoever holds the fcntl lock on the state file.
func ParseTerraform(b []byte) (*Holder, *Terraform, error) {
	const f = FormatTerraform
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, malformed(f, "not a JSON object")
	}
	for _, k := range []string{"ID", "Operation", "Info", "Who", "Version", "Created", "Path"} {
		if _, ok := raw[k]; !ok {
			return nil, nil, malformed(f, "no %s", k)
		}
	}
	if len(raw) != 7 {
		return nil, nil, malformed(f, "keys that are not a LockInfo's")
	}
	var v terraformJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, nil, malformed(f, "not a LockInfo")
	}
	if v.ID == "" || v.Path == "" {
		return nil, nil, malformed(f, "no ID or no Path")
	}
	tf := &Terraform{ID: v.ID, Operation: v.Operation, Who: v.Who, Version: v.Version, Created: v.Created, State: filepath.Base(v.Path)}
	h := &Holder{Command: "terraform", Since: v.Created}
	if user, host, ok := strings.Cut(v.Who, "@"); ok {
		h.User, h.Host = user, host
	}
	return h, tf, nil
}

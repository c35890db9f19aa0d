package lock

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// newToken returns <pid>.<32 lowercase hex>.1: the shape scan reads from
// side-file names (<lock>.pub.<token>, <lock>.rel.<token>), so that doctor
// can tell whose they are.
func newToken(pid int) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return fmt.Sprintf("%d.%s.1", pid, hex.EncodeToString(b[:]))
}

// encode writes lockctl's record (docs/record-format.md). scan.ParseLockctl reads
// it; a test keeps the two in step.
func encode(h scan.Holder) []byte {
	var b strings.Builder
	magic := scan.LockctlMagic
	if h.Reserved {
		magic = scan.ReserveMagic
	}
	fmt.Fprintf(&b, "%s\n", magic)
	fmt.Fprintf(&b, "token %s\npid %d\nstart %d\nboot %s\npidns %s\nhost %s\ncommand %s\nacquired %s\n",
		h.Token, h.Pid, h.Start, h.BootID, h.PidNS, h.Host, oneLine(h.Command), h.Since.UTC().Format(time.RFC3339Nano))
	if h.Root != "" {
		// Acquire refuses a root that cannot be written on one line.
		fmt.Fprintf(&b, "root %s\n", h.Root)
	}
	if h.Slots > 1 {
		fmt.Fprintf(&b, "slots %d\n", h.Slots)
	}
	if h.Reserved {
		fmt.Fprintf(&b, "reserved-until %d\ntimens %d\n", int64(h.Until), int64(h.TimeNS))
		return []byte(b.String())
	}
	for _, a := range h.Also {
		fmt.Fprintf(&b, "also %d %d\n", a.Pid, a.Start)
	}
	return []byte(b.String())
}

// oneLine keeps a command name from breaking the record's line structure.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	if s == "" {
		return "?"
	}
	return s
}

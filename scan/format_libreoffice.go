package scan

import (
	"strings"
	"unicode/utf8"
)

// ProducerLibreOffice is LibreOffice (and OpenOffice), whose
// .~lock.<document>#, beside the document, says who has it open.
const ProducerLibreOffice = "libreoffice"

// FormatLibreOffice is LibreOffice's document lock: one entry of five
// comma-separated, backslash-escaped fields ending in ';'.
const FormatLibreOffice Format = "libreoffice" // .~lock.<name>#: "<name>,<user>,<host>,<time>,<profile URL>;"

// LibreOffice is what a LibreOffice lock records beyond its user and host.
type LibreOffice struct {
	// Name is the user's name as set in LibreOffice (often empty), Time
	// the local time it was taken ("dd.mm.yyyy hh:mm"), Profile the URL of
	// the user installation (profile) of the LibreOffice that took it.
	Name, Time, Profile string
}

var formatLibreOffice = FormatSpec{
	Name:       "libreoffice",
	Formats:    []Format{FormatLibreOffice},
	Producer:   ProducerLibreOffice,
	Room:       "format_libreoffice.go",
	KnownNames: []string{".~lock.*#"},
	Parse:      func(b []byte) (*Holder, error) { h, _, err := ParseLibreOffice(b); return h, err },
	Fuzz:       []string{"scan:FuzzParseProducerRecord"},
	Rule:       "LibreOffice records no pid. It takes over, silently, only a lock of its own system user, host and profile (\"could remain because of crash\"); any other it shows as locked by that user and leaves to the user, who may open a copy, read-only, or (rewriting the lock in place) anyway.",
	Remedy:     "none: another host's is foreign; this host's is owner-less, never removed by lockctl (LibreOffice rewrites the file in place when it takes it over); open the document in LibreOffice, which decides, or remove the file by hand once no LibreOffice has the document open.",
	Source:     "LibreOffice svl/source/misc/lockfilecommon.cxx (ParseEntry, GenerateOwnEntry), svl/source/misc/documentlockfile.cxx (WriteEntryToStream, OverwriteOwnLockFile), include/svl/lockfilecommon.hxx (LockFileComponent), sfx2/source/doc/docfile.cxx (LockOrigFileOnDemand: bOwnLock)",
	Verdicts:   []string{"foreign", "ownerless"},
	claims: func(l *Lock, r *Record) bool {
		return r.Holder == nil && isLibreOfficeLockName(l.Name)
	},
	read: func(l *Lock, r *Record) {
		if h, lo, err := ParseLibreOffice(r.Raw); err == nil {
			l.Format, l.Producer, l.LibreOffice = FormatLibreOffice, ProducerLibreOffice, lo
			r.Holder, r.Err = h, nil
		}
	},
	inPlace: func(l *Lock) string {
		if l.Kind == KindFile {
			return LibreOfficeInPlace
		}
		return ""
	},
}

// LibreOfficeInPlace is why lockctl never claims a LibreOffice document
// lock: LibreOffice takes one over by truncating it and writing its own
// entry in place (documentlockfile.cxx, OverwriteOwnLockFile).
const LibreOfficeInPlace = "lockctl does not remove a LibreOffice lock: LibreOffice takes one over by rewriting it in place, and records no pid to judge it by; open the document in LibreOffice, which decides, or remove the file by hand once no LibreOffice has the document open"

// isLibreOfficeLockName: ".~lock." + the document's name + "#"
// (LockFileCommon: the prefix ".~lock.", the name, "%23").
func isLibreOfficeLockName(name string) bool {
	return len(name) > len(".~lock.#") && strings.HasPrefix(name, ".~lock.") && strings.HasSuffix(name, "#")
}

// ParseLibreOffice parses a LibreOffice document lock: one entry of the
// five LockFileComponent fields, OOOUSERNAME, SYSUSERNAME, LOCALHOST,
// EDITTIME, USERURL, each escaped by EscapeCharacters ('\' before '\',
// ',' and ';'), separated by ',' and the last ended by ';', in UTF-8
// (documentlockfile.cxx, WriteEntryToStream; lockfilecommon.cxx,
// ParseEntry and ParseName, which reject any other escape). Nothing may
// follow the entry. The Holder names no pid: LibreOffice records none.
func ParseLibreOffice(b []byte) (*Holder, *LibreOffice, error) {
	const f = FormatLibreOffice
	if !utf8.Valid(b) {
		return nil, nil, malformed(f, "the entry is not UTF-8")
	}
	var fields []string
	var cur strings.Builder
	esc := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case esc:
			if c != ',' && c != ';' && c != '\\' {
				return nil, nil, malformed(f, "an escape of a character that is not escaped")
			}
			cur.WriteByte(c)
			esc = false
		case c == '\\':
			esc = true
		case c == ',' || c == ';':
			fields = append(fields, cur.String())
			cur.Reset()
			if len(fields) == 5 {
				if c != ';' || i != len(b)-1 {
					return nil, nil, malformed(f, "not one entry of five fields ending in ';'")
				}
				return libreOfficeHolder(fields)
			}
			if c == ';' {
				return nil, nil, malformed(f, "%d fields, want 5", len(fields))
			}
		case c < 0x20:
			return nil, nil, malformed(f, "a control character in a field")
		default:
			cur.WriteByte(c)
		}
	}
	return nil, nil, malformed(f, "the entry does not end in ';'")
}

func libreOfficeHolder(fs []string) (*Holder, *LibreOffice, error) {
	if fs[1] == "" || fs[2] == "" {
		return nil, nil, malformed(FormatLibreOffice, "no system user or no host")
	}
	return &Holder{User: fs[1], Host: fs[2], Command: "soffice"}, &LibreOffice{Name: fs[0], Time: fs[3], Profile: fs[4]}, nil
}

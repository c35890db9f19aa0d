package scan

// What package verdict, fix and report ask of a lock's format: each asks
// the format the lock was read as (UnitOf), never names one. A format says
// it in its FormatSpec, in its own room.

// DirRecord is where a lock directory's holder record sits.
type DirRecord struct {
	// Beside is the suffix of the record kept beside the directory
	// (registry-a's <lock>.holder), "" for a record inside it.
	Beside string
	// Inside names the record of holder h inside the directory.
	Inside func(h *Holder) string
	// TokenInClaim says a claim of the record carries its holder's token
	// in its name (a claim another reader can tie to the record).
	TokenInClaim bool
}

// Suffix is where the record of holder h of a lock directory sits, as
// what follows the lock's own path: ".holder" beside it, "/holder.<token>"
// inside it; "" when the format keeps none there (or h is needed and nil).
func (d *DirRecord) Suffix(h *Holder) string {
	switch {
	case d.Beside != "":
		return d.Beside
	case d.Inside == nil || h == nil:
		return ""
	}
	return "/" + d.Inside(h)
}

var (
	unitByProducer = map[string]*FormatSpec{}
	unitByFormat   = map[Format]*FormatSpec{}
)

func init() {
	for _, f := range formats {
		if _, ok := unitByProducer[f.Producer]; f.Producer != "" && !ok {
			unitByProducer[f.Producer] = f
		}
		for _, ff := range f.Formats {
			if _, ok := unitByFormat[ff]; !ok {
				unitByFormat[ff] = f
			}
		}
	}
}

// UnitOf is the registered format the lock l was read as: its producer's,
// or else the first in the registry whose Formats hold l.Format; nil for
// none (bytes no format reads). It is the registry's entry, not a copy.
func UnitOf(l *Lock) *FormatSpec {
	if f := unitByProducer[l.Producer]; f != nil {
		return f
	}
	return UnitOfFormat(l.Format)
}

// UnitOfFormat is the first registered format whose Formats hold f, or nil.
func UnitOfFormat(f Format) *FormatSpec { return unitByFormat[f] }

// InPlace says why lockctl never claims the lock l: its format's producer
// takes a stale lock by writing it again in place, which keeps its inode,
// so no claim can be bound to the holder judged (docs/fix-protocol.md).
// It is "" for a lock that may be claimed.
func InPlace(l *Lock) string {
	if u := UnitOf(l); u != nil && u.inPlace != nil {
		return u.inPlace(l)
	}
	return ""
}

// KeptWhy says why the gone lock l is kept all the same by its format's
// rule (a vim swap with unsaved changes), or "".
func KeptWhy(l *Lock) string {
	if u := UnitOf(l); u != nil && u.keep != nil {
		return u.keep(l)
	}
	return ""
}

// BoundByFirstBytes says the lock l, read to MaxRecord bytes, is bound by
// those first bytes and its inode: its format's record is at its start and
// the file runs longer (a vim swap's block 0).
func BoundByFirstBytes(l *Lock) bool {
	u := UnitOf(l)
	return u != nil && u.longRecord != nil
}

// DirRecordOf is where the lock directory l's format keeps its holder
// record, or nil when it keeps none lockctl can claim.
func DirRecordOf(l *Lock) *DirRecord {
	if u := UnitOf(l); u != nil && l.Kind == KindDir {
		return u.DirRecord
	}
	return nil
}

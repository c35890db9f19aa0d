package scan

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Matcher decides which names are locks and which are side files of a lock.
// Every name the walk meets is asked, so the common pattern shapes (*.lock,
// LCK..*, an exact name) are compiled to plain string comparisons.
type Matcher struct {
	pats []pattern
	// onlyKnown are the patterns whose locks are kept only when a known
	// producer's; plain are the others.
	onlyKnown, plain []pattern
}

type patternKind int

const (
	patExact  patternKind = iota // no metacharacters
	patSuffix                    // "*" + literal
	patPrefix                    // literal + "*"
	patGlob                      // anything else: path.Match
)

type pattern struct {
	kind patternKind
	lit  string // the literal part, or the whole glob for patGlob
	// For a patGlob: what any name it matches starts and ends with (the
	// literal text before its first metacharacter and after its last),
	// asked before path.Match, which was a fortieth of doctor's time:
	// most names miss on their first byte.
	head, tail string
}

func compile(g string) pattern {
	meta := func(s string) bool { return strings.ContainsAny(s, `*?[\`) }
	switch {
	case !meta(g):
		return pattern{kind: patExact, lit: g}
	case strings.HasPrefix(g, "*") && !meta(g[1:]):
		return pattern{kind: patSuffix, lit: g[1:]}
	case strings.HasSuffix(g, "*") && !meta(g[:len(g)-1]):
		return pattern{kind: patPrefix, lit: g[:len(g)-1]}
	}
	// Escapes aside, the text before the first of *?[ is literal, and so
	// is the text after the last of *?] (a ] there may be literal too:
	// then what follows it is still a part of the literal tail).
	p := pattern{kind: patGlob, lit: g}
	if !strings.Contains(g, `\`) {
		p.head = g[:max(0, strings.IndexAny(g, "*?["))]
		if i := strings.LastIndexAny(g, "*?]"); i >= 0 {
			p.tail = g[i+1:]
		}
	}
	return p
}

// NewMatcher checks the glob patterns (path.Match syntax) and returns a
// Matcher for them, or for DefaultNames when globs is empty.
func NewMatcher(globs []string) (Matcher, error) {
	var m Matcher
	if len(globs) == 0 {
		for _, g := range ProducerNames {
			m.onlyKnown = append(m.onlyKnown, compile(g))
		}
		globs = DefaultNames
	}
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return Matcher{}, fmt.Errorf("bad --name pattern %q: %w", g, err)
		}
		if strings.Contains(g, "/") {
			return Matcher{}, fmt.Errorf("bad --name pattern %q: it matches base names, so it cannot contain /", g)
		}
		m.pats = append(m.pats, compile(g))
	}
	m.plain = m.pats
	m.pats = append(m.onlyKnown[:len(m.onlyKnown):len(m.onlyKnown)], m.plain...)
	return m, nil
}

// OnlyIfKnown reports whether a lock called name is to be reported only
// when it is a known producer's: it matches one of ProducerNames and none
// of the other patterns.
func (m Matcher) OnlyIfKnown(name string) bool {
	return matchAny(m.onlyKnown, name) && !matchAny(m.plain, name)
}

// exactMatcher matches one name, whatever characters it holds.
func exactMatcher(name string) Matcher { return Matcher{pats: []pattern{{kind: patExact, lit: name}}} }

// IsLock reports whether name matches a lock pattern.
func (m Matcher) IsLock(name string) bool { return matchAny(m.pats, name) }

func matchAny(pats []pattern, name string) bool {
	for _, p := range pats {
		switch p.kind {
		case patExact:
			if name == p.lit {
				return true
			}
		case patSuffix:
			if strings.HasSuffix(name, p.lit) {
				return true
			}
		case patPrefix:
			if strings.HasPrefix(name, p.lit) {
				return true
			}
		default:
			if !strings.HasPrefix(name, p.head) || !strings.HasSuffix(name, p.tail) || len(name) < len(p.head)+len(p.tail) {
				continue
			}
			if ok, _ := path.Match(p.lit, name); ok {
				return true
			}
		}
	}
	return false
}

// side is a side file of the lock named base.
type side struct {
	name string // the side file's own name
	base string // the lock it belongs to
	kind ClaimKind
	rest string // what follows the marker: pid, token, ...
}

// Markers that make <lock><marker><rest> a side file of <lock>. The order
// matters: ".holder.releasing." must be tried before ".holder".
var markers = []struct {
	marker string
	kind   ClaimKind
}{
	{".holder.releasing.", ClaimRelease},
	{".dead.", ClaimBreak},
	{".pub.", ClaimPublish},
	{".rel.", ClaimRelease},
	{".new.", ClaimBuild},
}

// Side reports whether name is a side file of some lock whose name matches
// m, and if so of which. A side file is never a lock of its own, even when
// its name also matches a lock pattern (LCK..ttyS0.dead.1.2).
func (m Matcher) side(name string) (side, bool) {
	if base, ok := strings.CutSuffix(name, ".holder"); ok && base != "" && m.IsLock(base) {
		return side{name: name, base: base, kind: ClaimHolder}, true
	}
	for _, mk := range markers {
		for i := 0; ; {
			j := strings.Index(name[i:], mk.marker)
			if j < 0 {
				break
			}
			at := i + j
			base, rest := name[:at], name[at+len(mk.marker):]
			if base != "" && rest != "" && m.IsLock(base) {
				return side{name: name, base: base, kind: mk.kind, rest: rest}, true
			}
			i = at + 1
		}
	}
	return side{}, false
}

// defaultSides reads side files under the default lock names.
var defaultSides = func() Matcher {
	m, err := NewMatcher(DefaultNames)
	if err != nil {
		panic(err)
	}
	return m
}()

// SideOf reports whether name, under the default lock names, reads as a
// side file (a build, claim or release) of the lock it returns, rather than
// as a lock: doctor would judge a lock of that name as that lock's claim,
// and could finish it.
func SideOf(name string) (lock string, ok bool) {
	s, ok := defaultSides.side(name)
	return s.base, ok
}

// SideRoom is the most that lockctl's side files add to a lock's name: a
// break claim of one of its own locks,
// <lock>.dead.<pid>.<32 hex>.<attempt>.<breaker pid>.ns<inode>, sized for
// 7-digit pids, a 3-digit attempt and a 10-digit namespace inode (the
// builds, <lock>.new.<token>.<pid>, and releases, <lock>.rel.<token>.<pid>,
// are shorter). A lock whose name leaves less room than this below the
// file system's name limit could be taken but never broken.
var SideRoom = len(fmt.Sprintf(".dead.%d.%032x.%d.%d.ns%d", 9999999, 0, 999, 9999999, uint32(1<<32-1)))

// NSSuffix is what lockctl appends to the name of a break claim it makes,
// so that a reader in another pid namespace can tell which namespace the
// breaker's pid is of: ".ns" and the namespace's inode number, or "" where
// the link is not of the form "pid:[<inode>]" (macOS's "-").
func NSSuffix(pidNS string) string {
	ino, ok := strings.CutPrefix(pidNS, "pid:[")
	if ino, ok2 := strings.CutSuffix(ino, "]"); ok && ok2 && isDigits(ino) {
		return ".ns" + ino
	}
	return ""
}

// CutNSSuffix takes an NSSuffix off the end of s, returning the namespace
// it names as a link ("pid:[<inode>]"), or "" if s has none.
func CutNSSuffix(s string) (string, string) { return cutNS(s) }

// cutNS takes an NSSuffix off the end of rest, returning the namespace it
// names as a link ("pid:[<inode>]"), or "" if rest has none.
func cutNS(rest string) (string, string) {
	if i := strings.LastIndex(rest, ".ns"); i > 0 && isDigits(rest[i+3:]) {
		return rest[:i], "pid:[" + rest[i+3:] + "]"
	}
	return rest, ""
}

// claimant says who made a side file and which generation B token, if any,
// its name carries:
//
//	<lock>.dead.<breaker pid>.<random>          generation A, pid files
//	<lock>.dead.<pid>.<hex>.<attempt>.<breaker> generation B
//	either of those, then .ns<inode>              lockctl, breaking
//	<lock>.holder.releasing.<pid>               generation A release
//	<lock>.rel.<token>, <lock>.pub.<token>      generation B
//	<lock>.new.<token>.<maker pid>[.ns<inode>]  lockctl, building a lock
//	<lock>.rel.<token>.<releaser pid>           lockctl release
func (s side) claimant() (by int64, token string, maker bool) {
	switch {
	case s.kind == ClaimBreak:
		rest, _ := cutNS(s.rest)
		parts := strings.Split(rest, ".")
		switch len(parts) {
		case 2:
			if pid, ok := parsePid(parts[0]); ok && isDigits(parts[0]) {
				return pid, "", true
			}
		case 4:
			tok := strings.Join(parts[:3], ".")
			if _, ok := ParseBToken(tok); ok && isDigits(parts[3]) {
				pid, _ := parsePid(parts[3])
				return pid, tok, true
			}
		}
	case s.kind == ClaimRelease && strings.HasPrefix(s.name, s.base+".holder.releasing."):
		if isDigits(s.rest) {
			pid, _ := parsePid(s.rest)
			return pid, "", true
		}
	case s.kind == ClaimRelease || s.kind == ClaimPublish || s.kind == ClaimBuild:
		rest := s.rest
		if s.kind == ClaimBuild {
			rest, _ = cutNS(rest) // <lock>.new.<token>.<maker pid>.ns<inode>
		}
		if pid, ok := ParseBToken(rest); ok {
			return pid, rest, false
		}
		// lockctl names the process that made it after the token:
		// <lock>.new.<token>.<maker pid>, <lock>.rel.<token>.<releaser pid>.
		if i := strings.LastIndexByte(rest, '.'); i > 0 && isDigits(rest[i+1:]) {
			if _, ok := ParseBToken(rest[:i]); ok {
				pid, _ := parsePid(rest[i+1:])
				return pid, rest[:i], true
			}
		}
	}
	return 0, "", false
}

// SlotName is the name of slot i (2 and up) of the counting lock name
// (--slots): <stem>.slot<i><ext>, beside it. Slot 1 is name itself.
func SlotName(name string, i int) string {
	ext := path.Ext(name)
	return fmt.Sprintf("%s.slot%d%s", strings.TrimSuffix(name, ext), i, ext)
}

// SlotOf reads a slot's name: the name of the counting lock it is a slot
// of (slot 1's), and its number. Any other name is slot 1 of itself.
func SlotOf(name string) (lock string, i int) {
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if j := strings.LastIndex(stem, ".slot"); j > 0 {
		if n, err := strconv.Atoi(stem[j+len(".slot"):]); err == nil && n >= 2 && isDigits(stem[j+len(".slot"):]) {
			return stem[:j] + ext, n
		}
	}
	return name, 1
}

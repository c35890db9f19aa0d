package scan

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ProducerVim is vim, whose swap file .<file>.sw[a-p] is its lock.
const ProducerVim = "vim"

// FormatVim is vim's swap file, read by its block 0.
const FormatVim Format = "vim" // .<file>.sw[a-p]: vim's swap file, block 0

// Vim is what a vim swap file's block 0 says beyond its pid.
type Vim struct {
	// File is the file being edited.
	File string
	// Dirty says the swap holds changes that were never saved: the one
	// copy of someone's work, to recover with vim -r, never to remove.
	Dirty bool
}

var formatVim = FormatSpec{
	Name:       "vim",
	Formats:    []Format{FormatVim},
	Producer:   ProducerVim,
	Room:       "format_vim.go",
	KnownNames: []string{".*.sw[a-p]"},
	Parse:      func(b []byte) (*Holder, error) { h, _, err := ParseVimSwap(b); return h, err },
	Fuzz:       []string{"scan:FuzzParseVimSwap"},
	Rule:       "vim takes a swap whose pid runs on its host as another vim's edit (the \"ATTENTION\" prompt); one whose vim is gone it offers to recover or delete.",
	Remedy:     "gone: remove the swap, after which vim edits the file without the prompt; a swap with unsaved changes is never removed: recover it with vim -r.",
	Source:     "vim src/memline.c, struct block0, findswapname, ml_recover",
	Verdicts:   []string{"live", "gone", "foreign"},
	claims: func(l *Lock, r *Record) bool {
		return IsVimSwapName(l.Name) && strings.HasPrefix(string(r.Raw), "b0VIM ")
	},
	read: func(l *Lock, r *Record) {
		if h, v, err := ParseVimSwap(r.Raw); err == nil {
			l.Format, l.Producer, l.Vim = FormatVim, ProducerVim, v
			r.Holder, r.Err = h, nil
		}
	},
	// A swap file runs to many blocks; its block 0 is what says who
	// holds it, and the first MaxRecord bytes bind a removal to it.
	longRecord: func(name string, raw []byte) bool {
		return IsVimSwapName(name) && len(raw) == MaxRecord && strings.HasPrefix(string(raw), "b0VIM ")
	},
	keep: func(l *Lock) string {
		if v := l.Vim; v != nil && v.Dirty {
			return fmt.Sprintf("a vim swap file with unsaved changes is never removed: recover them with 'vim -r %s'", v.File)
		}
		return ""
	},
}

// IsVimSwapName reports whether name is vim's swap file for a file in the
// same directory: ".<name>.sw[a-p]" (src/memline.c, findswapname: ".swp",
// then ".swo", ".swn", ... down to ".swa").
func IsVimSwapName(name string) bool {
	if len(name) < 6 || name[0] != '.' {
		return false
	}
	ext := name[len(name)-4:]
	return ext[:3] == ".sw" && ext[3] >= 'a' && ext[3] <= 'p'
}

// ParseVimSwap reads block 0 of a vim swap file (src/memline.c, struct
// block0): "b0" at 0, "VIM <version>" at 2, the pid at 24 (4 bytes, lowest
// first: long_to_char), the user at 28 (40 bytes), the host at 68 (40),
// the file name at 108 (NUL-terminated), and at 1007 the dirty flag, 0x55
// when the buffer holds changes never saved (b0_dirty, the last byte of
// b0_fname).
func ParseVimSwap(b []byte) (*Holder, *Vim, error) {
	const f = FormatVim
	if len(b) < 1008 || string(b[:6]) != "b0VIM " {
		return nil, nil, malformed(f, "not a vim swap file's block 0")
	}
	cstr := func(off, n int) string {
		s := b[off : off+n]
		if i := bytes.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		return string(s)
	}
	pid := int64(b[24]) | int64(b[25])<<8 | int64(b[26])<<16 | int64(b[27])<<24
	if pid <= 0 {
		return nil, nil, malformed(f, "no pid in block 0")
	}
	h := &Holder{Pid: pid, PidText: strconv.FormatInt(pid, 10), User: cstr(28, 40), Host: cstr(68, 40), Command: "vim"}
	v := &Vim{File: cstr(108, 1007-108), Dirty: b[1007] == 0x55}
	return h, v, nil
}

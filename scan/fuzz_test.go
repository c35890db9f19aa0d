package scan_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lockctl/lockctl/scan"
)

// The seed corpora are in testdata/fuzz/<FuzzName>/, one real record a file
// (docs/lock-formats.md sections 1-3), plus the hostile shapes the table
// tests use. `go test` runs every seed as a regular test.

// checkPid asserts that pid is what parsing text gives: the decimal value,
// or MaxInt64 / MinInt64 when text overflows int64.
func checkPid(t *testing.T, pid int64, text string) {
	t.Helper()
	digits := strings.TrimPrefix(text, "-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		t.Fatalf("PidText %q is not a decimal number (Pid %d)", text, pid)
	}
	want, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		want = math.MaxInt64
		if strings.HasPrefix(text, "-") {
			want = math.MinInt64
		}
	}
	if pid != want {
		t.Fatalf("Pid = %d, want %d for PidText %q", pid, want, text)
	}
}

// checkErr asserts that a parse error is a *scan.FormatError whose text is
// safe to print: valid UTF-8 without a control character.
func checkErr(t *testing.T, err error) {
	t.Helper()
	var fe *scan.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error = %T %v, want *scan.FormatError", err, err)
	}
	msg := err.Error()
	if !utf8.ValidString(msg) {
		t.Fatalf("error text %q is not valid UTF-8", msg)
	}
	for i := 0; i < len(msg); i++ {
		if msg[i] < 0x20 || msg[i] == 0x7f {
			t.Fatalf("error text %q contains control byte %#x", msg, msg[i])
		}
	}
}

func FuzzParseRegistryA(f *testing.F) {
	f.Add([]byte(recA(tokA, "4213", "agmsg-team", "host.example.com")))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := append([]byte(nil), b...)
		h, err := scan.ParseRegistryA(b)
		if string(in) != string(b) {
			t.Fatalf("ParseRegistryA modified its input")
		}
		if err != nil {
			if h != nil {
				t.Fatalf("holder %+v returned with error %v", h, err)
			}
			checkErr(t, err)
			return
		}
		if h == nil {
			t.Fatal("nil holder and nil error")
		}
		checkPid(t, h.Pid, h.PidText)
		// Exactly four lines in order: a parsed record is its own
		// rendering, byte for byte.
		if got := recA(h.Token, h.PidText, h.Command, h.Host); got != string(b) {
			t.Fatalf("record %q parsed as %+v, which renders as %q", b, h, got)
		}
		if h.Host == "" {
			t.Fatal("empty host accepted")
		}
		if h.Token != "" {
			want := h.Host + "." + h.PidText + "."
			if !strings.HasPrefix(h.Token, want) {
				t.Fatalf("token %q does not start with host.pid %q", h.Token, want)
			}
		}
	})
}

func FuzzParseRegistryB(f *testing.F) {
	f.Add([]byte(recB(tokB, "4213", "scope "+scope64, "break writers")), tokB)
	f.Fuzz(func(t *testing.T, b []byte, nameToken string) {
		h, err := scan.ParseRegistryB(b, nameToken)
		if err != nil {
			if h != nil {
				t.Fatalf("holder %+v returned with error %v", h, err)
			}
			checkErr(t, err)
			return
		}
		if h == nil {
			t.Fatal("nil holder and nil error")
		}
		checkPid(t, h.Pid, h.PidText)
		tpid, ok := scan.ParseBToken(h.Token)
		if !ok {
			t.Fatalf("token %q accepted but ParseBToken refuses it", h.Token)
		}
		if tpid != h.Pid {
			t.Fatalf("token %q names pid %d, record pid %d", h.Token, tpid, h.Pid)
		}
		// Compared without int64 clamping: the same number, as written.
		tokPid, _ := new(big.Int).SetString(strings.Split(h.Token, ".")[0], 10)
		recPid, _ := new(big.Int).SetString(h.PidText, 10)
		if tokPid == nil || recPid == nil || tokPid.Cmp(recPid) != 0 {
			t.Fatalf("token %q names another pid than the record's %q", h.Token, h.PidText)
		}
		if nameToken != "" && nameToken != h.Token {
			t.Fatalf("token %q accepted for file name token %q", h.Token, nameToken)
		}
		if h.Break != "" && h.Break != "no" && h.Break != "writers" {
			t.Fatalf("break %q accepted", h.Break)
		}
		var extra []string
		if h.Scope != "" {
			extra = append(extra, "scope "+h.Scope)
		}
		if h.Break != "" {
			extra = append(extra, "break "+h.Break)
		}
		want := fmt.Sprintf("token %s\npid %s\ncommand %s\nhost %s\n", h.Token, h.PidText, h.Command, h.Host)
		for _, e := range extra {
			want += e + "\n"
		}
		if want != string(b) {
			t.Fatalf("record %q parsed as %+v, which renders as %q", b, h, want)
		}
	})
}

func FuzzParsePidFile(f *testing.F) {
	f.Add([]byte("4213\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		format, h, err := scan.ParsePidFile(b)
		if err != nil {
			if h != nil {
				t.Fatalf("holder %+v returned with error %v", h, err)
			}
			if format != scan.FormatUnrecognized && format != scan.FormatKeyValue {
				t.Fatalf("format %q with error %v", format, err)
			}
			checkErr(t, err)
			return
		}
		switch format {
		case scan.FormatEmpty:
			if len(b) != 0 || h != nil {
				t.Fatalf("%q read as empty with holder %+v", b, h)
			}
		case scan.FormatNoPid:
			if h != nil {
				t.Fatalf("%q read as no-pid with holder %+v", b, h)
			}
		case scan.FormatKernel:
			if h != nil || string(b) != scan.KernelRecord {
				t.Fatalf("%q read as a kernel-lock record (holder %+v)", b, h)
			}
		case scan.FormatPid, scan.FormatUUCP, scan.FormatKeyValue:
			if h == nil {
				t.Fatalf("%q read as %s without a holder", b, format)
			}
			checkPid(t, h.Pid, h.PidText)
			if h.Pid == 0 && strings.Trim(h.PidText, "0") == "" {
				t.Fatalf("%q: pid %q is no owner, yet read as %s with a holder", b, h.PidText, format)
			}
			if format != scan.FormatKeyValue && !strings.Contains(string(b), h.PidText) {
				t.Fatalf("%q: PidText %q is not in the content", b, h.PidText)
			}
			if format == scan.FormatUUCP && !strings.HasPrefix(string(b), " ") {
				t.Fatalf("%q read as uucp without leading spaces", b)
			}
		default:
			t.Fatalf("%q read as format %q without an error", b, format)
		}
	})
}

// FuzzParseLockctl: lockctl's own record never panics the parser, and a
// record it accepts keeps its pid consistent with the token.
func FuzzParseLockctl(f *testing.F) {
	f.Add([]byte("lockctl-lock 1\ntoken 42." + strings.Repeat("ab", 16) + ".1\npid 42\nstart 35162\nboot b\npidns pid:[4026531836]\nhost h\ncommand c\nacquired 2026-11-29T12:00:00Z\n"))
	f.Add([]byte("lockctl-lock 1\ntoken 42." + strings.Repeat("ab", 16) + ".1\npid 42\nstart 1\nboot b\npidns p\nhost h\ncommand c\nacquired 2026-11-29T12:00:00.5Z\nalso 43 2\n"))
	f.Add([]byte("lockctl-lock 2\n"))
	f.Add([]byte("lockctl-lock 2\ntoken 42." + strings.Repeat("ab", 16) + ".1\npid 42\nstart 1\nboot b\npidns p\nhost h\ncommand c\nacquired 2026-11-29T12:00:00.5Z\nreserved-until 1265360455287\ntimens -3600000000000\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := scan.ParseLockctl(b)
		if err != nil {
			if h != nil {
				t.Fatalf("ParseLockctl returned a holder with error %v", err)
			}
			return
		}
		// Only version 2 is a reservation, and a reservation names its
		// reserver alone.
		if h.Reserved != strings.HasPrefix(string(b), scan.ReserveMagic+"\n") || h.Reserved && len(h.Also) > 0 {
			t.Fatalf("ParseLockctl read %q as reserved=%v with %d also", b, h.Reserved, len(h.Also))
		}
		if tpid, ok := scan.ParseBToken(h.Token); !ok || tpid != h.Pid || !h.HasStart {
			t.Fatalf("ParseLockctl accepted token %q for pid %d (start fenced %v)", h.Token, h.Pid, h.HasStart)
		}
	})
}

// FuzzParsePostgres: a PostgreSQL lock file never panics the parser, and
// one it accepts names a pid written on its first line and an absolute data
// directory.
func FuzzParsePostgres(f *testing.F) {
	f.Add([]byte("29666\n/tmp/pgt/data\n1796167159\n55432\n/tmp/pgt\n\n  9978586         4\nready   \n"), true)
	f.Add([]byte("-4242\n/srv/pg\n"), false)
	f.Fuzz(func(t *testing.T, b []byte, dataDir bool) {
		h, pg, err := scan.ParsePostgres(b, dataDir)
		if err != nil {
			if h != nil || pg != nil {
				t.Fatalf("holder %+v returned with error %v", h, err)
			}
			checkErr(t, err)
			return
		}
		checkPid(t, h.Pid, h.PidText)
		first, _, _ := strings.Cut(string(b), "\n")
		if strings.TrimPrefix(first, "-") != h.PidText || !strings.HasPrefix(pg.DataDir, "/") || pg.HasShm && !dataDir {
			t.Fatalf("%q read as pid %q, data directory %q, shm %v", b, h.PidText, pg.DataDir, pg.HasShm)
		}
	})
}

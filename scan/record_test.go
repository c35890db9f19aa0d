package scan_test

import (
	"bytes"
	"errors"
	"math"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/scan"
)

// Fixed parts of real records (docs/lock-formats.md sections 1-3).
const (
	hex32   = "0123456789abcdef0123456789abcdef"
	scope64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	tokB    = "4213." + hex32 + ".1"
	tokA    = "host.example.com.4213.1700000000." + hex32
	// evil is hostile content: an escape sequence and a marker word that
	// must never reach an error message.
	evil = "\x1b[31mEVIL"
)

func recA(token, pid, command, host string) string {
	return "token " + token + "\npid " + pid + "\ncommand " + command + "\nhost " + host + "\n"
}

func recB(token, pid string, extra ...string) string {
	s := "token " + token + "\npid " + pid + "\ncommand agmsg-send\nhost build-7\n"
	for _, e := range extra {
		s += e + "\n"
	}
	return s
}

// checkFormatError asserts that err is a *scan.FormatError of format want
// whose text neither carries a raw control character nor quotes the
// record's content (checked through the marker word of evil, in any case).
func checkFormatError(t *testing.T, err error, want scan.Format, content []byte) {
	t.Helper()
	var fe *scan.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error = %T %v, want *scan.FormatError", err, err)
	}
	if fe.Format != want {
		t.Errorf("FormatError.Format = %q, want %q", fe.Format, want)
	}
	msg := err.Error()
	for i := 0; i < len(msg); i++ {
		if msg[i] < 0x20 || msg[i] == 0x7f {
			t.Errorf("error text %q contains control byte %#x", msg, msg[i])
			break
		}
	}
	if bytes.Contains(content, []byte("EVIL")) && strings.Contains(strings.ToUpper(msg), "EVIL") {
		t.Errorf("error text %q quotes the record's content", msg)
	}
	if bytes.Contains(content, []byte("31m")) && strings.Contains(msg, "31m") {
		t.Errorf("error text %q quotes the record's escape sequence", msg)
	}
}

func TestParseRegistryA(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr bool
		want    scan.Holder // compared field by field when !wantErr
	}{
		{
			name: "dotted host",
			in:   recA(tokA, "4213", "agmsg-team", "host.example.com"),
			want: scan.Holder{Pid: 4213, PidText: "4213", Host: "host.example.com", Command: "agmsg-team", Token: tokA, Since: time.Unix(1700000000, 0)},
		},
		{
			name: "empty token",
			in:   "token \npid 4213\ncommand agmsg-team\nhost h1\n",
			want: scan.Holder{Pid: 4213, PidText: "4213", Host: "h1", Command: "agmsg-team"},
		},
		{
			name: "plain host",
			in:   recA("h1.77.1700000001."+hex32, "77", "x", "h1"),
			want: scan.Holder{Pid: 77, PidText: "77", Host: "h1", Command: "x", Token: "h1.77.1700000001." + hex32, Since: time.Unix(1700000001, 0)},
		},
		{
			// The command is the holder's own business; rendering it safely
			// is the caller's job. The parser keeps it byte for byte.
			name: "hostile command kept verbatim",
			in:   recA("", "5", evil+" x", "h1"),
			want: scan.Holder{Pid: 5, PidText: "5", Host: "h1", Command: evil + " x"},
		},
		{
			// Out of range, but as written: package verdict judges the range.
			name: "negative pid with empty token",
			in:   recA("", "-5", "x", "h1"),
			want: scan.Holder{Pid: -5, PidText: "-5", Host: "h1", Command: "x"},
		},
		{
			name: "pid overflow is clamped",
			in:   recA("", "99999999999999999999", "x", "h1"),
			want: scan.Holder{Pid: math.MaxInt64, PidText: "99999999999999999999", Host: "h1", Command: "x"},
		},
		{name: "token host disagrees", in: recA("other.example.com.4213.1700000000."+hex32, "4213", "x", "host.example.com"), wantErr: true},
		{name: "token host is a suffix", in: recA("example.com.4213.1700000000."+hex32, "4213", "x", "host.example.com"), wantErr: true},
		{name: "token pid disagrees", in: recA("host.example.com.4214.1700000000."+hex32, "4213", "x", "host.example.com"), wantErr: true},
		{name: "token pid written differently", in: recA("h1.04213.1700000000."+hex32, "4213", "x", "h1"), wantErr: true},
		{name: "token hex uppercase", in: recA("h1.4213.1700000000."+strings.ToUpper(hex32), "4213", "x", "h1"), wantErr: true},
		{name: "token hex short", in: recA("h1.4213.1700000000."+hex32[1:], "4213", "x", "h1"), wantErr: true},
		{name: "token epoch not digits", in: recA("h1.4213.17e8."+hex32, "4213", "x", "h1"), wantErr: true},
		{name: "token three parts", in: recA("4213.1700000000."+hex32, "4213", "x", "h1"), wantErr: true},
		{name: "token garbage", in: recA(evil, "4213", "x", "h1"), wantErr: true},
		{name: "missing trailing newline", in: strings.TrimSuffix(recA("", "4213", "x", "h1"), "\n"), wantErr: true},
		// A write cut short mid-record: "pid 12" of "pid 1234" names the
		// wrong process and must never parse.
		{name: "cut short at pid", in: "token \npid 12", wantErr: true},
		{name: "cut short after pid", in: "token \npid 1234\n", wantErr: true},
		{name: "cut short at host", in: "token \npid 1234\ncommand x\nhost h", wantErr: true},
		{name: "three lines", in: "token \npid 4213\ncommand x\n", wantErr: true},
		{name: "five lines", in: recA("", "4213", "x", "h1") + "scope " + scope64 + "\n", wantErr: true},
		{name: "trailing blank line", in: recA("", "4213", "x", "h1") + "\n", wantErr: true},
		{name: "wrong order", in: "pid 4213\ntoken \ncommand x\nhost h1\n", wantErr: true},
		{name: "host before command", in: "token \npid 4213\nhost h1\ncommand x\n", wantErr: true},
		{name: "no space after key", in: "token\npid 4213\ncommand x\nhost h1\n", wantErr: true},
		{name: "empty host", in: recA("", "4213", "x", ""), wantErr: true},
		{name: "pid not a number", in: recA("", "12ab", "x", "h1"), wantErr: true},
		{name: "pid empty", in: recA("", "", "x", "h1"), wantErr: true},
		{name: "pid with plus", in: recA("", "+12", "x", "h1"), wantErr: true},
		{name: "pid with space", in: recA("", " 12", "x", "h1"), wantErr: true},
		{name: "crlf", in: "token \r\npid 4213\r\ncommand x\r\nhost h1\r\n", wantErr: true},
		{name: "nul byte", in: "token \npid 42\x0013\ncommand x\nhost h1\n", wantErr: true},
		{name: "generation B record", in: recB(tokB, "4213"), wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "hostile pid", in: recA("", evil, "x", "h1"), wantErr: true},
		{name: "hostile binary", in: "\x1b[31mEVIL\x00\xff\xfe\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := scan.ParseRegistryA([]byte(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseRegistryA(%q) = %+v, nil, want a FormatError", tt.in, h)
				}
				if h != nil {
					t.Errorf("ParseRegistryA(%q) returned holder %+v with error %v", tt.in, h, err)
				}
				checkFormatError(t, err, scan.FormatRegistryA, []byte(tt.in))
				return
			}
			if err != nil {
				t.Fatalf("ParseRegistryA(%q) error = %v, want nil", tt.in, err)
			}
			checkHolder(t, h, tt.want)
		})
	}
}

func checkHolder(t *testing.T, got *scan.Holder, want scan.Holder) {
	t.Helper()
	if got == nil {
		t.Fatalf("holder = nil, want %+v", want)
	}
	if got.Pid != want.Pid || got.PidText != want.PidText {
		t.Errorf("Pid, PidText = %d, %q, want %d, %q", got.Pid, got.PidText, want.Pid, want.PidText)
	}
	if got.Host != want.Host || got.Command != want.Command || got.Token != want.Token {
		t.Errorf("Host, Command, Token = %q, %q, %q, want %q, %q, %q",
			got.Host, got.Command, got.Token, want.Host, want.Command, want.Token)
	}
	if !got.Since.Equal(want.Since) {
		t.Errorf("Since = %v, want %v", got.Since, want.Since)
	}
	if got.Scope != want.Scope || got.Break != want.Break {
		t.Errorf("Scope, Break = %q, %q, want %q, %q", got.Scope, got.Break, want.Scope, want.Break)
	}
	if got.HasStart || got.Start != 0 || got.BootID != "" || got.PidNS != "" {
		t.Errorf("start identity set from a record that has none: %+v", got)
	}
}

func TestParseRegistryB(t *testing.T) {
	base := scan.Holder{Pid: 4213, PidText: "4213", Host: "build-7", Command: "agmsg-send", Token: tokB}
	with := func(scope, brk string) scan.Holder {
		h := base
		h.Scope, h.Break = scope, brk
		return h
	}
	tests := []struct {
		name      string
		in        string
		nameToken string
		wantErr   bool
		want      scan.Holder
	}{
		{name: "four lines", in: recB(tokB, "4213"), nameToken: tokB, want: base},
		{name: "no name token skips the check", in: recB(tokB, "4213"), want: base},
		{name: "scope", in: recB(tokB, "4213", "scope "+scope64), nameToken: tokB, want: with(scope64, "")},
		{name: "scope and break no", in: recB(tokB, "4213", "scope "+scope64, "break no"), nameToken: tokB, want: with(scope64, "no")},
		{name: "scope and break writers", in: recB(tokB, "4213", "scope "+scope64, "break writers"), nameToken: tokB, want: with(scope64, "writers")},
		{name: "break writers without scope", in: recB(tokB, "4213", "break writers"), nameToken: tokB, want: with("", "writers")},
		{name: "break no without scope", in: recB(tokB, "4213", "break no"), nameToken: tokB, want: with("", "no")},
		{
			name:      "token pid with leading zero",
			in:        recB("04213."+hex32+".1", "4213"),
			nameToken: "04213." + hex32 + ".1",
			want:      scan.Holder{Pid: 4213, PidText: "4213", Host: "build-7", Command: "agmsg-send", Token: "04213." + hex32 + ".1"},
		},
		{name: "bad break value", in: recB(tokB, "4213", "break yes"), nameToken: tokB, wantErr: true},
		{name: "empty break value", in: recB(tokB, "4213", "break "), nameToken: tokB, wantErr: true},
		{name: "hostile break value", in: recB(tokB, "4213", "break "+evil), nameToken: tokB, wantErr: true},
		{name: "duplicate scope", in: recB(tokB, "4213", "scope "+scope64, "scope "+scope64), nameToken: tokB, wantErr: true},
		{name: "duplicate break", in: recB(tokB, "4213", "break no", "break no"), nameToken: tokB, wantErr: true},
		{name: "break before scope", in: recB(tokB, "4213", "break no", "scope "+scope64), nameToken: tokB, wantErr: true},
		{name: "scope short", in: recB(tokB, "4213", "scope "+scope64[1:]), nameToken: tokB, wantErr: true},
		{name: "scope uppercase", in: recB(tokB, "4213", "scope "+strings.ToUpper(scope64)), nameToken: tokB, wantErr: true},
		{name: "unknown fifth line", in: recB(tokB, "4213", "start 12345"), nameToken: tokB, wantErr: true},
		{name: "seven lines", in: recB(tokB, "4213", "scope "+scope64, "break no", "x y"), nameToken: tokB, wantErr: true},
		{name: "three lines", in: "token " + tokB + "\npid 4213\ncommand x\n", nameToken: tokB, wantErr: true},
		{name: "token differs from name token", in: recB(tokB, "4213"), nameToken: "4213." + hex32 + ".2", wantErr: true},
		{name: "token pid differs from pid", in: recB(tokB, "4214"), nameToken: tokB, wantErr: true},
		{name: "token pid differs, no name token", in: recB(tokB, "4214"), wantErr: true},
		{
			// Both pids overflow int64 and clamp to the same value, but the
			// token still names another pid than the record.
			name:    "token pid differs beyond int64",
			in:      recB("99999999999999999999."+hex32+".1", "99999999999999999998"),
			wantErr: true,
		},
		{name: "generation A token", in: recB(tokA, "4213"), wantErr: true},
		{name: "token hex uppercase", in: recB("4213."+strings.ToUpper(hex32)+".1", "4213"), wantErr: true},
		{name: "empty token", in: recB("", "4213"), wantErr: true},
		{name: "empty host", in: "token " + tokB + "\npid 4213\ncommand x\nhost \n", nameToken: tokB, wantErr: true},
		{name: "pid not a number", in: recB(tokB, "x4213"), nameToken: tokB, wantErr: true},
		{name: "missing trailing newline", in: strings.TrimSuffix(recB(tokB, "4213", "break no"), "\n"), nameToken: tokB, wantErr: true},
		{name: "cut short at break", in: strings.TrimSuffix(recB(tokB, "4213", "break writers"), "ters\n"), nameToken: tokB, wantErr: true},
		{name: "wrong order", in: "pid 4213\ntoken " + tokB + "\ncommand x\nhost h\n", nameToken: tokB, wantErr: true},
		{name: "nul byte", in: recB(tokB, "4213", "break no\x00"), nameToken: tokB, wantErr: true},
		{name: "hostile token", in: recB(evil, "4213"), nameToken: tokB, wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := scan.ParseRegistryB([]byte(tt.in), tt.nameToken)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseRegistryB(%q, %q) = %+v, nil, want a FormatError", tt.in, tt.nameToken, h)
				}
				if h != nil {
					t.Errorf("ParseRegistryB(%q, %q) returned holder %+v with error %v", tt.in, tt.nameToken, h, err)
				}
				checkFormatError(t, err, scan.FormatRegistryB, []byte(tt.in))
				return
			}
			if err != nil {
				t.Fatalf("ParseRegistryB(%q, %q) error = %v, want nil", tt.in, tt.nameToken, err)
			}
			checkHolder(t, h, tt.want)
		})
	}
}

func TestParseBToken(t *testing.T) {
	tests := []struct {
		tok    string
		want   int64
		wantOK bool
	}{
		{tokB, 4213, true},
		{"1." + hex32 + ".0", 1, true},
		{"0." + hex32 + ".0", 0, true},
		{"4213." + hex32 + ".17", 4213, true},
		{"99999999999999999999." + hex32 + ".1", math.MaxInt64, true},
		{"", 0, false},
		{"4213." + hex32, 0, false},
		{"4213." + hex32 + ".1.2", 0, false},
		{"4213." + hex32 + ".", 0, false},
		{"." + hex32 + ".1", 0, false},
		{"-1." + hex32 + ".1", 0, false},
		{"+1." + hex32 + ".1", 0, false},
		{"4213." + strings.ToUpper(hex32) + ".1", 0, false},
		{"4213." + hex32[1:] + ".1", 0, false},
		{"4213." + hex32 + "0.1", 0, false},
		{"4213." + hex32 + ".x", 0, false},
		{" 4213." + hex32 + ".1", 0, false},
		{tokA, 0, false},
		{evil, 0, false},
	}
	for _, tt := range tests {
		got, ok := scan.ParseBToken(tt.tok)
		if ok != tt.wantOK || (ok && got != tt.want) {
			t.Errorf("ParseBToken(%q) = %d, %v, want %d, %v", tt.tok, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestParsePidFile(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		wantFormat scan.Format
		wantErr    bool
		// wantHolder is nil when no holder is expected.
		wantHolder *scan.Holder
	}{
		{name: "dotlockfile -p", in: "4213\n", wantFormat: scan.FormatPid, wantHolder: &scan.Holder{Pid: 4213, PidText: "4213"}},
		{name: "bare pid without newline", in: "4213", wantFormat: scan.FormatPid, wantHolder: &scan.Holder{Pid: 4213, PidText: "4213"}},
		{name: "crlf", in: "4213\r\n", wantFormat: scan.FormatPid, wantHolder: &scan.Holder{Pid: 4213, PidText: "4213"}},
		{name: "uucp", in: "      4213\n", wantFormat: scan.FormatUUCP, wantHolder: &scan.Holder{Pid: 4213, PidText: "4213"}},
		{name: "uucp without newline", in: "      4213", wantFormat: scan.FormatUUCP, wantHolder: &scan.Holder{Pid: 4213, PidText: "4213"}},
		{name: "uucp ten digits", in: "1234567890\n", wantFormat: scan.FormatPid, wantHolder: &scan.Holder{Pid: 1234567890, PidText: "1234567890"}},
		{name: "no pid with newline", in: "0\n", wantFormat: scan.FormatNoPid},
		{name: "procmail no pid", in: "0", wantFormat: scan.FormatNoPid},
		{name: "uucp no pid", in: "         0\n", wantFormat: scan.FormatNoPid},
		{name: "zeros", in: "000\n", wantFormat: scan.FormatNoPid},
		{name: "empty", in: "", wantFormat: scan.FormatEmpty},
		{name: "negative", in: "-1\n", wantFormat: scan.FormatPid, wantHolder: &scan.Holder{Pid: -1, PidText: "-1"}},
		{name: "above pid_max", in: "99999999999\n", wantFormat: scan.FormatPid, wantHolder: &scan.Holder{Pid: 99999999999, PidText: "99999999999"}},
		{name: "overflow clamped", in: "99999999999999999999\n", wantFormat: scan.FormatPid, wantHolder: &scan.Holder{Pid: math.MaxInt64, PidText: "99999999999999999999"}},
		{name: "letters", in: "abc\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "newline only", in: "\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "spaces only", in: "   \n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "plus sign", in: "+5\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "tab aligned", in: "\t4213\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "trailing space", in: "4213 \n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "two lines", in: "4213\n\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "pid then text", in: "4213\nfoo\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "binary with nul", in: "42\x0013\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "binary", in: "\x7fELF\x02\x01\x01\x00\x00\x00", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "hostile", in: evil + "\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "hostile with nul", in: evil + "\x00\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "generation A record", in: recA("", "4213", "x", "h1"), wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "pid key", in: "pid=812\n", wantFormat: scan.FormatKeyValue, wantHolder: &scan.Holder{Pid: 812, PidText: "812"}},
		{name: "pid key without newline", in: "pid=812", wantFormat: scan.FormatKeyValue, wantHolder: &scan.Holder{Pid: 812, PidText: "812"}},
		{name: "pid and host", in: "pid=812\nhost=h\n", wantFormat: scan.FormatKeyValue, wantHolder: &scan.Holder{Pid: 812, PidText: "812", Host: "h"}},
		{name: "keys any case and spaced", in: "# lock\nPID = 812\nHostname=h\ncmd=worker\n", wantFormat: scan.FormatKeyValue, wantHolder: &scan.Holder{Pid: 812, PidText: "812", Host: "h", Command: "worker"}},
		{name: "pid key zero", in: "pid=0", wantFormat: scan.FormatNoPid},
		{name: "pid key zero newline", in: "pid=0\nhost=h\n", wantFormat: scan.FormatNoPid},
		{name: "duplicate pid key", in: "pid=812\npid=813\n", wantFormat: scan.FormatKeyValue, wantErr: true},
		{name: "duplicate pid key other case", in: "pid=812\nPID=812\n", wantFormat: scan.FormatKeyValue, wantErr: true},
		{name: "pid key not a number", in: "pid=abc\n", wantFormat: scan.FormatKeyValue, wantErr: true},
		{name: "pid key empty", in: "pid=\n", wantFormat: scan.FormatKeyValue, wantErr: true},
		{name: "pid key hostile", in: "pid=" + evil + "\n", wantFormat: scan.FormatKeyValue, wantErr: true},
		{name: "no pid key", in: "host=h\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		{name: "key value then garbage", in: "pid=1\n" + evil + "\n", wantFormat: scan.FormatUnrecognized, wantErr: true},
		// The key is the record's content too: a duplicate hostile key must
		// not be quoted back in the error text.
		{name: "duplicate hostile key", in: "pid=5\n" + evil + "=1\n" + evil + "=2\n", wantFormat: scan.FormatKeyValue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, h, err := scan.ParsePidFile([]byte(tt.in))
			if f != tt.wantFormat {
				t.Errorf("ParsePidFile(%q) format = %q, want %q", tt.in, f, tt.wantFormat)
			}
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParsePidFile(%q) = %q, %+v, nil, want an error", tt.in, f, h)
				}
				if h != nil {
					t.Errorf("ParsePidFile(%q) returned holder %+v with error %v", tt.in, h, err)
				}
				checkFormatError(t, err, tt.wantFormat, []byte(tt.in))
				return
			}
			if err != nil {
				t.Fatalf("ParsePidFile(%q) error = %v, want nil", tt.in, err)
			}
			if tt.wantHolder == nil {
				if h != nil {
					t.Errorf("ParsePidFile(%q) holder = %+v, want nil", tt.in, h)
				}
				return
			}
			checkHolder(t, h, *tt.wantHolder)
		})
	}
}

func TestFormatErrorText(t *testing.T) {
	err := &scan.FormatError{Format: scan.FormatPid, Reason: "the content is not a pid"}
	if got, want := err.Error(), "malformed pid record: the content is not a pid"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// The compiled fast paths must agree with path.Match on every shape.
func TestMatcherAgreesWithPathMatch(t *testing.T) {
	globs := []string{"*.lock", "*.lck", "LCK..*", "exact.pid", "a*b", "*", "x?.lock", "[ab]*", `\*.lock`, "*.lock*",
		// Globs with a literal head or tail (tried before path.Match).
		".*.sw[a-p]", ".X*-lock", ".~lock.*#", ".*.lock.info", "a]b*c", "x[!a]y", "?", "*x*", "a*b*c", "ab?ba", "[a-c]?]d"}
	names := []string{"", ".lock", "a.lock", "a.lock.holder", "LCK..", "LCK..ttyS0", "lck..x", "exact.pid", "exact.pidx",
		"ab", "axxb", "x1.lock", "b", "*.lock", "a.lck", "\xff.lock", "LCK.", "a.lockx",
		".a.swp", ".swp", "..swa", ".a.swq", ".X0-lock", ".X-lock", ".Xlock", ".~lock.a#", ".~lock.#", ".~lock.", ".x.lock.info",
		".lock.info", "..lock.info", "]x", "ax", "a]bzc", "a]bc", "a]c", "xby", "xay", "x", "abc", "abba", "abxba", "aba", "bx]d", "bxd"}
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			t.Fatalf("%q: %v", g, err)
		}
		m, err := scan.NewMatcher([]string{g})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			want, _ := path.Match(g, n)
			if got := m.IsLock(n); got != want {
				t.Errorf("NewMatcher(%q).IsLock(%q) = %v, path.Match says %v", g, n, got, want)
			}
		}
	}
}

// TestParsePostgres: the bytes of a real postmaster.pid and socket lock
// (PostgreSQL 15, pg_ctl start, then read with cat -A), and what is not one.
func TestParsePostgres(t *testing.T) {
	pid := "29666\n/tmp/pgt/data\n1796167159\n55432\n/tmp/pgt\n\n  9978586         4\nready   \n"
	h, pg, err := scan.ParsePostgres([]byte(pid), true)
	if err != nil || h.Pid != 29666 || h.Since.Unix() != 1796167159 || pg.DataDir != "/tmp/pgt/data" || !pg.HasShm || pg.ShmKey != 9978586 || pg.ShmID != 4 || pg.Standalone {
		t.Errorf("scan.ParsePostgres(postmaster.pid) = %+v, %+v, %v", h, pg, err)
	}
	sock := "29666\n/tmp/pgt/data\n1796167159\n55432\n/tmp/pgt\n"
	if h, pg, err := scan.ParsePostgres([]byte(sock), false); err != nil || h.Pid != 29666 || pg.HasShm {
		t.Errorf("scan.ParsePostgres(.s.PGSQL.55432.lock) = %+v, %+v, %v", h, pg, err)
	}
	// Written in steps: the first two lines are enough to name the holder.
	if h, pg, err := scan.ParsePostgres([]byte("29666\n/tmp/pgt/data\n"), true); err != nil || h.Pid != 29666 || pg.HasShm {
		t.Errorf("scan.ParsePostgres(two lines) = %+v, %+v, %v", h, pg, err)
	}
	if h, pg, err := scan.ParsePostgres([]byte("-4242\n/srv/pg\n"), true); err != nil || h.Pid != 4242 || !pg.Standalone {
		t.Errorf("scan.ParsePostgres(a standalone backend) = %+v, %+v, %v", h, pg, err)
	}
	for _, bad := range []string{"", "29666\n", "29666\nrelative\n", "x\n/srv\n", "29666\n/srv", "+1\n/srv\n", "--1\n/srv\n"} {
		if _, _, err := scan.ParsePostgres([]byte(bad), true); err == nil {
			t.Errorf("scan.ParsePostgres(%q) succeeded, want an error", bad)
		}
	}
	for name, want := range map[string]bool{".s.PGSQL.5432.lock": true, ".s.PGSQL..lock": false, ".s.PGSQL.99999.lock": false, ".s.PGSQL.5432": false, "x.lock": false,
		"5432.lock": false, "x.s.PGSQL.5432.lock": false} {
		if got := scan.IsPGSocketLock(name); got != want {
			t.Errorf("scan.IsPGSocketLock(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestParseVimSwap: block 0 as vim 9.0 wrote it (xxd of a real swap file:
// "b0VIM 9.0", pid 11353 = 59 2c 00 00 at 24, "root" at 28, "vm" at 68,
// the file name at 108, 0x55 at 1007 for unsaved changes).
func TestParseVimSwap(t *testing.T) {
	b := make([]byte, 4096)
	copy(b, "b0VIM 9.0")
	copy(b[24:], []byte{0x59, 0x2c, 0, 0})
	copy(b[28:], "root")
	copy(b[68:], "vm")
	copy(b[108:], "/tmp/vt/f.txt")
	b[1007] = 0x55
	h, v, err := scan.ParseVimSwap(b)
	if err != nil || h.Pid != 11353 || h.User != "root" || h.Host != "vm" || v.File != "/tmp/vt/f.txt" || !v.Dirty {
		t.Errorf("ParseVimSwap = %+v, %+v, %v", h, v, err)
	}
	b[1007] = 0
	if _, v, err := scan.ParseVimSwap(b); err != nil || v.Dirty {
		t.Errorf("ParseVimSwap(saved) = %+v, %v, want clean", v, err)
	}
	for _, bad := range [][]byte{b[:1000], append([]byte("b1VIM "), b[6:]...), append(append([]byte{}, b[:24]...), append([]byte{0, 0, 0, 0}, b[28:]...)...)} {
		if _, _, err := scan.ParseVimSwap(bad); err == nil {
			t.Errorf("ParseVimSwap(%q...) succeeded, want an error", bad[:8])
		}
	}
	for name, want := range map[string]bool{".f.txt.swp": true, ".f.txt.swa": true, ".f.txt.swq": false, "f.txt.swp": false, ".swp": false} {
		if got := scan.IsVimSwapName(name); got != want {
			t.Errorf("IsVimSwapName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRegisteredNames: the default names, derived from the registry of
// formats, are the ones lockctl has always had, in the order the help shows
// them; the producers' names are the same set.
func TestRegisteredNames(t *testing.T) {
	if got, want := scan.DefaultNames, []string{"*.lock", "*.lck", "LCK..*", "postmaster.pid"}; !slices.Equal(got, want) {
		t.Errorf("DefaultNames = %q, want %q", got, want)
	}
	got := slices.Sorted(slices.Values(scan.ProducerNames))
	if want := []string{"*.lockfile", "*.pid", ".#*", ".*.lock.info", ".*.sw[a-p]", ".X*-lock", ".cargo-lock", ".package-cache", ".package-cache-mutate", ".parentlock", ".~lock.*#", "SingletonLock", "lock", "lock-frontend", "wlock"}; !slices.Equal(got, want) {
		t.Errorf("ProducerNames = %q, want the set %q", scan.ProducerNames, want)
	}
}

package scan_test

import (
	"encoding/binary"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/scan"
)

// Fuzz targets of the producers' parsers that had none (issue 29): vim's
// swap, the link locks, Python filelock's SoftFileLock. Their seeds are in
// testdata/fuzz/<FuzzName>/, made from the real programs' bytes
// (docs/formats.md), and every target is listed in .ci/run.

// FuzzParseVimSwap: block 0 of a vim swap never panics the parser, and one
// it accepts names the pid at byte 24 and says dirty exactly for 0x55 at
// 1007.
func FuzzParseVimSwap(f *testing.F) {
	b := make([]byte, 1024)
	copy(b, "b0VIM 9.0")
	copy(b[24:], []byte{0x59, 0x2c, 0, 0})
	copy(b[28:], "root")
	copy(b[68:], "vm")
	copy(b[108:], "/tmp/vt/f.txt")
	b[1007] = 0x55
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		in := append([]byte(nil), b...)
		h, v, err := scan.ParseVimSwap(b)
		if string(in) != string(b) {
			t.Fatal("ParseVimSwap modified its input")
		}
		if err != nil {
			if h != nil || v != nil {
				t.Fatalf("holder %+v, vim %+v returned with error %v", h, v, err)
			}
			checkErr(t, err)
			return
		}
		if len(b) < 1008 || !strings.HasPrefix(string(b), "b0VIM ") {
			t.Fatalf("%d bytes not beginning b0VIM read as a swap", len(b))
		}
		pid := int64(binary.LittleEndian.Uint32(b[24:28]))
		if h.Pid != pid || pid <= 0 || h.PidText != strconv.FormatInt(pid, 10) {
			t.Fatalf("pid %d (%q), want %d from bytes 24-27", h.Pid, h.PidText, pid)
		}
		if v.Dirty != (b[1007] == 0x55) {
			t.Fatalf("dirty %v with byte 1007 %#x", v.Dirty, b[1007])
		}
		for _, s := range []string{h.User, h.Host, v.File} {
			if strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("a NUL kept in %q", s)
			}
		}
	})
}

var linkProducers = map[string]bool{scan.ProducerMercurial: true, scan.ProducerEmacs: true, scan.ProducerChromium: true, scan.ProducerFirefox: true, scan.ProducerCcache: true}

// FuzzParseLinkLock: a link lock's target never panics the parser, for
// any producer, and one it accepts names a positive pid written in the
// target, where that producer writes it.
func FuzzParseLinkLock(f *testing.F) {
	f.Add(scan.ProducerMercurial, "build-7/effffffc:4242")
	f.Add(scan.ProducerEmacs, "ann@build-7.example.com.4242:1796100000")
	f.Add(scan.ProducerChromium, "vm-2719")
	f.Add(scan.ProducerFirefox, "127.0.0.1:+4341")
	f.Add(scan.ProducerCcache, "build-7.example-4242-140152213341952-1796100000.123456789")
	f.Fuzz(func(t *testing.T, producer, target string) {
		h, err := scan.ParseLinkLock(producer, target)
		if err != nil {
			if h != nil {
				t.Fatalf("holder %+v returned with error %v", h, err)
			}
			if linkProducers[producer] {
				// The walk names only these producers: an unknown one's
				// name is the caller's, not the target's, and is echoed.
				checkErr(t, err)
			}
			return
		}
		checkPid(t, h.Pid, h.PidText)
		if h.Pid <= 0 {
			t.Fatalf("%s %q: pid %d accepted", producer, target, h.Pid)
		}
		var ok bool
		switch producer {
		case scan.ProducerMercurial:
			ok = strings.HasSuffix(target, ":"+h.PidText) && strings.HasPrefix(target, h.Host)
		case scan.ProducerEmacs:
			ok = strings.HasPrefix(target, h.User+"@"+h.Host+"."+h.PidText)
		case scan.ProducerChromium:
			ok = target == h.Host+"-"+h.PidText
		case scan.ProducerCcache:
			ok = strings.HasPrefix(target, h.Host+"-"+h.PidText+"-")
		case scan.ProducerFirefox:
			ok = h.HostAddr && (target == h.Host+":"+h.PidText || target == h.Host+":+"+h.PidText)
		}
		if !ok {
			t.Fatalf("%s %q read as %+v", producer, target, h)
		}
	})
}

var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// FuzzParseFilelock: a SoftFileLock record never panics the parser, and
// one it accepts is its pid and host lines, fenced exactly when it has the
// third line, by a raw start time (field 22 as its writer was shown it).
func FuzzParseFilelock(f *testing.F) {
	f.Add([]byte("4242\nbuild-7\n"))
	f.Add([]byte("4242\nbuild-7\n141188003986214302548364479806669881343\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := scan.ParseFilelock(b)
		if err != nil {
			if h != nil {
				t.Fatalf("holder %+v returned with error %v", h, err)
			}
			checkErr(t, err)
			return
		}
		checkPid(t, h.Pid, h.PidText)
		ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if h.Pid <= 0 || ls[0] != h.PidText || ls[1] != h.Host || h.Host == "" {
			t.Fatalf("%q read as pid %d (%q), host %q", b, h.Pid, h.PidText, h.Host)
		}
		if h.HasStart != (len(ls) == 3) || h.RawStart != h.HasStart {
			t.Fatalf("%q: start fenced %v, raw %v", b, h.HasStart, h.RawStart)
		}
		if h.BootID != "" && !uuid.MatchString(h.BootID) {
			t.Fatalf("%q: boot id %q", b, h.BootID)
		}
	})
}

// producerRecords are seeds of FuzzParseProducerRecord, by format name:
// records as each producer writes them (docs/formats.md quotes the source).
var producerRecords = map[string][]string{
	"gnupg":       {"      4242\nbuild-7\n", "   2147483\nunknown\n"},
	"shadow":      {"4242\x00"},
	"xorg":        {"      4242\n"},
	"terraform":   {`{"ID":"3b4f0c1e-6a0d-5f3e-9d7c-2a1b0c9d8e7f","Operation":"OperationTypeApply","Info":"","Who":"ann@build-7","Version":"1.9.8","Created":"2026-12-07T17:05:00.123456789Z","Path":"terraform.tfstate"}`},
	"nano":        {nanoLock(0x4c3d, "root", "vm", "/tmp/f.txt")},
	"libreoffice": {",ann,build-7,07.12.2026 17:05,file:///home/ann/.config/libreoffice/4;", "Ann\\, B,ann,vm,01.01.2026 00:00,;"},
}

// FuzzParseProducerRecord: the record parser of every producer that has
// no target of its own (the rooms of issue 43) never panics, and a record
// it accepts names a positive pid written in it, laid out as that
// producer writes it.
func FuzzParseProducerRecord(f *testing.F) {
	for name, seeds := range producerRecords {
		for _, s := range seeds {
			f.Add(name, []byte(s))
		}
	}
	parsers := map[string]func([]byte) (*scan.Holder, error){}
	for _, spec := range scan.Formats() {
		if _, ok := producerRecords[spec.Name]; ok && spec.Parse != nil {
			parsers[spec.Name] = spec.Parse
		}
	}
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		parse := parsers[name]
		if parse == nil {
			return
		}
		in := append([]byte(nil), b...)
		h, err := parse(b)
		if string(in) != string(b) {
			t.Fatalf("%s: the parser modified its input", name)
		}
		if err != nil {
			if h != nil {
				t.Fatalf("%s: holder %+v returned with error %v", name, h, err)
			}
			checkErr(t, err)
			return
		}
		if name == "libreoffice" || name == "terraform" {
			if h.Pid != 0 || h.PidText != "" {
				t.Fatalf("%s %q: a pid %d (%q), where LibreOffice records none", name, b, h.Pid, h.PidText)
			}
		} else {
			checkPid(t, h.Pid, h.PidText)
			if h.Pid <= 0 {
				t.Fatalf("%s %q: pid %d accepted", name, b, h.Pid)
			}
		}
		var ok bool
		switch name {
		case "gnupg":
			ok = string(b) == fmt.Sprintf("%10s\n%s\n", h.PidText, h.Host)
		case "shadow":
			ok = string(b) == h.PidText+"\x00"
		case "terraform":
			ok = h.Command == "terraform" && strings.HasPrefix(string(b), "{")
		case "nano":
			ok = len(b) == 1024 && strings.HasPrefix(string(b), "b0nano ") && int64(binary.LittleEndian.Uint32(b[24:28])) == h.Pid
		case "libreoffice":
			// The user as LibreOffice writes it: a backslash before each backslash, ',' and ';'.
			esc := strings.NewReplacer(`\`, `\\`, ",", `\,`, ";", `\;`).Replace(h.User)
			ok = strings.Contains(string(b), ","+esc+",") && h.Host != "" && strings.HasSuffix(string(b), ";")
		case "xorg":
			ok = string(b) == fmt.Sprintf("%10s\n", h.PidText)
		default:
			t.Fatalf("%s: no check of what it accepts", name)
		}
		if !ok {
			t.Fatalf("%s %q read as %+v", name, b, h)
		}
	})
}

// nanoLock is a nano lock file as nano 7.2's write_lockfile writes it.
func nanoLock(pid uint32, user, host, file string) string {
	b := make([]byte, 1024)
	copy(b, "b0nano 7.2")
	binary.LittleEndian.PutUint32(b[24:], pid)
	copy(b[28:], user)
	copy(b[68:], host)
	copy(b[108:], file)
	return string(b)
}

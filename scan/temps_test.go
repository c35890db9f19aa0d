package scan_test

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/scan"
)

// The temporaries as their producers make them, byte for byte: gnupg
// common/dotlock.c dotlock_create_unix (".#lk%p.<node>.<pid>" holding
// "%10d\n<node>\n"), shadow lib/commonio.c commonio_lock_nowait and
// do_lock_file ("<database>.<pid>" holding "<pid>\0"), xorg-server
// os/utils.c LockServer (".tX<n>-lock" holding "%10lu\n").
func TestTempNames(t *testing.T) {
	for _, tc := range []struct {
		name, raw      string
		producer, lock string
		pid            int64
		host           string
		ok             bool
	}{
		{name: ".#lk0x55d1c2a3b4c0.vm.4242", raw: "      4242\nvm\n", producer: "gnupg", pid: 4242, host: "vm", ok: true},
		{name: ".#lk0x5581.build-7.example.com.77", raw: "        77\nbuild-7.example.com\n", producer: "gnupg", pid: 77, host: "build-7.example.com", ok: true},
		{name: "passwd.4242", raw: "4242\x00", producer: "shadow", lock: "passwd.lock", pid: 4242, ok: true},
		{name: "gshadow.9", raw: "9\x00", producer: "shadow", lock: "gshadow.lock", pid: 9, ok: true},
		{name: ".tX7-lock", raw: "      4242\n", producer: "xorg", lock: ".X7-lock", pid: 4242, ok: true},
		// Name and bytes must agree, and be the producer's shape.
		{name: ".#lk0x55d1c2a3b4c0.vm.4242", raw: "      4243\nvm\n"},
		{name: ".#lk0x55d1c2a3b4c0.vm.4242", raw: "      4242\nother\n"},
		{name: ".#lk0x55d1c2a3b4c0.vm.4242x", raw: "      4242\nvm\n"}, // use_hardlinks_p's probe
		{name: ".#lk0xZZ.vm.4242", raw: "      4242\nvm\n"},
		{name: ".#lk0x55.vm.04242", raw: "      4242\nvm\n"},
		{name: ".#lk0x55..4242", raw: "      4242\n\n"},
		{name: "passwd.4242", raw: "4243\x00"},
		{name: "passwd.4242", raw: "4242\n"},
		{name: "passwd.x.4242", raw: "4242\x00"},
		{name: "passwd.", raw: "\x00"},
		{name: "passwd.0", raw: "0\x00"},
		{name: "passwd.99999999999", raw: "99999999999\x00"},
		{name: "motd.4242", raw: "4242\x00"},
		{name: ".tX7-lock", raw: "4242\n"},
		{name: ".tXa-lock", raw: "      4242\n"},
		{name: ".tX7-lockx", raw: "      4242\n"},
	} {
		t.Run(strconv.Quote(tc.name)+"/"+strconv.Quote(tc.raw), func(t *testing.T) {
			p, lock, pid, host, ok := scan.TempOf(tc.name, []byte(tc.raw))
			if ok != tc.ok || p != tc.producer || lock != tc.lock || pid != tc.pid || host != tc.host {
				t.Errorf("TempOf = %q, %q, %d, %q, %v; want %q, %q, %d, %q, %v", p, lock, pid, host, ok, tc.producer, tc.lock, tc.pid, tc.host, tc.ok)
			}
			if ok && !scan.MayBeTemp(tc.name) {
				t.Errorf("MayBeTemp(%q) = false for a temporary", tc.name)
			}
		})
	}
}

// FuzzTempNames: no name and bytes panic a format's temp hook, and one it
// accepts carries a pid in range, the same pid as its bytes, and a name
// its cheap prefix admits.
func FuzzTempNames(f *testing.F) {
	f.Add(".#lk0x55d1c2a3b4c0.vm.4242", []byte("      4242\nvm\n"))
	f.Add("passwd.4242", []byte("4242\x00"))
	f.Add(".tX7-lock", []byte("      4242\n"))
	f.Fuzz(func(t *testing.T, name string, raw []byte) {
		in := string(raw)
		p, lock, pid, host, ok := scan.TempOf(name, raw)
		if string(raw) != in {
			t.Fatal("a temp hook modified its input")
		}
		if !ok {
			return
		}
		if !scan.MayBeTemp(name) {
			t.Fatalf("%q accepted without passing the prefix test", name)
		}
		if pid <= 0 || pid > 1<<31-1 || !strings.Contains(in, strconv.FormatInt(pid, 10)) {
			t.Fatalf("%s temp %q: pid %d not in range or not in its bytes %q", p, name, pid, in)
		}
		if strings.ContainsAny(lock+host, "/\x00\n") {
			t.Fatalf("%s temp %q: lock %q host %q", p, name, lock, host)
		}
	})
}

// TestWalkTemps: the walk gives each lock its producer's temporaries (by
// name, or for GnuPG's by inode), reports those whose lock is gone as a
// lock of kind missing, and never reports a temporary as a lock itself.
func TestWalkTemps(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pubring.kbx.lock", "      4242\nvm\n")
	if err := os.Link(filepath.Join(dir, "pubring.kbx.lock"), filepath.Join(dir, ".#lk0x55d1c2a3b4c0.vm.4242")); err != nil {
		t.Fatal(err)
	}
	write(".#lk0x55d1c2a3b4c8.vm.4243", "      4243\nvm\n") // no lock is its inode
	write("passwd.lock", "4244\x00")
	write("passwd.4245", "4245\x00") // another tool, taking it
	write("group.4246", "4246\x00")  // its lock gone
	write(".tX7-lock", "      4247\n")
	write("motd.4248", "4248\x00") // no shadow database
	write("subuid.lock", "not shadow's\n")
	write("subuid.4249", "4249\x00") // for a lock of other bytes: still its
	m, err := scan.NewMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := scan.ResolveRoot(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	w := &scan.Walker{Match: m, Found: func(l *scan.Lock) {
		var ts []string
		for _, tp := range l.Temps {
			ts = append(ts, tp.Name+"="+strconv.FormatInt(tp.Pid, 10))
		}
		sort.Strings(ts)
		if _, dup := got[l.Name]; dup {
			t.Errorf("%s reported twice", l.Name)
		}
		got[l.Name] = string(l.Kind) + " " + l.Producer + " [" + strings.Join(ts, " ") + "]"
	}}
	if err := w.Walk(r); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"pubring.kbx.lock":           "file gnupg [.#lk0x55d1c2a3b4c0.vm.4242=4242]",
		".#lk0x55d1c2a3b4c8.vm.4243": "missing gnupg [.#lk0x55d1c2a3b4c8.vm.4243=4243]",
		"passwd.lock":                "file shadow [passwd.4245=4245]",
		"group.lock":                 "missing shadow [group.4246=4246]",
		".X7-lock":                   "missing xorg [.tX7-lock=4247]",
		"subuid.lock":                "file  [subuid.4249=4249]",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s reported: %q", k, got[k])
		}
	}
	// Named, as doctor NAME reads one lock.
	l, err := scan.ReadOne(dir, "group.lock")
	if err != nil || l == nil || len(l.Temps) != 1 || l.Temps[0].Name != "group.4246" {
		t.Errorf("ReadOne(group.lock) = %+v, %v; want its temporary group.4246", l, err)
	}
	// The temporary named: itself, alone, never read as a lock.
	l, err = scan.ReadOne(dir, ".#lk0x55d1c2a3b4c0.vm.4242")
	if err != nil || l == nil || l.Kind != scan.KindMissing || len(l.Temps) != 1 || l.Temps[0].Name != ".#lk0x55d1c2a3b4c0.vm.4242" {
		t.Errorf("ReadOne(its twin) = %+v, %v; want the temporary alone", l, err)
	}
	l, err = scan.ReadOne(dir, "pubring.kbx.lock")
	if err != nil || l == nil || len(l.Temps) != 1 || l.Temps[0].Name != ".#lk0x55d1c2a3b4c0.vm.4242" {
		t.Errorf("ReadOne(pubring.kbx.lock) = %+v, %v; want its twin", l, err)
	}
}

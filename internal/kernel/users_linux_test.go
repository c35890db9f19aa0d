package kernel

import (
	"bufio"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every user /etc/passwd knows must get the name libc gives it.
func TestUserNameMatchesLibc(t *testing.T) {
	for uid, name := range passwd() {
		u, err := user.LookupId(strconv.Itoa(uid))
		if err != nil {
			continue
		}
		if u.Username != name || userName(uid) != name {
			t.Errorf("uid %d: userName %q, passwd %q, os/user %q", uid, userName(uid), name, u.Username)
		}
	}
	if userName(0) != "root" {
		t.Errorf("userName(0) = %q, want root", userName(0))
	}
	if n := userName(1<<31 - 2); n != "" {
		t.Errorf("a uid no one has got the name %q", n)
	}
}

func TestParsePasswd(t *testing.T) {
	m := map[int]string{}
	parsePasswd(bufio.NewScanner(strings.NewReader(
		"root:x:0:0:root:/root:/bin/bash\n"+
			"# comment\n"+
			"toor:x:0:0::/root:/bin/sh\n"+ // a second name of uid 0: the first wins
			"+nisuser::::::\n"+
			"bad:x:notanumber:0::/:/bin/false\n"+
			"short:x\n"+
			"\n"+
			"app:x:1000:1000::/home/app:/bin/sh")), m)
	want := map[int]string{0: "root", 1000: "app"}
	if len(m) != len(want) || m[0] != "root" || m[1000] != "app" {
		t.Errorf("parsePasswd = %v, want %v", m, want)
	}
}

// getent(1) answers for a uid only the name service knows, and is run from
// where it is installed, never from a directory early in PATH.
func TestGetentByAbsolutePath(t *testing.T) {
	installed := false
	for _, p := range getentPaths {
		if _, err := os.Stat(p); err == nil {
			installed = true
		}
	}
	if !installed {
		t.Skip("getent(1) is not installed")
	}
	if n := getent(0); n != "root" {
		t.Errorf("getent(0) = %q, want root", n)
	}
	dir := t.TempDir()
	fake := "#!/bin/sh\necho 'planted:x:4242:4242::/:/bin/sh'\n"
	if err := os.WriteFile(filepath.Join(dir, "getent"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	if n := getent(4242); n == "planted" {
		t.Errorf("getent ran the getent found first in PATH (%s)", dir)
	}
}

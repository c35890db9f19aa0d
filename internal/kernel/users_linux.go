package kernel

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// userNames remembers each uid's name for the run: a report of many live
// locks of one user looks it up once.
var userNames sync.Map

// userName is the name of uid, or "" when none is known. It reads
// /etc/passwd itself and asks getent(1) only for a uid not there (a
// directory service's user, through NSS). Package os/user would do the
// same through libc, but importing it makes every start of lockctl load
// the dynamic linker and libc (docs/performance.md), which the lock
// commands, started once per critical section, cannot afford.
func userName(uid int) string {
	if n, ok := userNames.Load(uid); ok {
		return n.(string)
	}
	n, ok := passwd()[uid]
	if !ok {
		n = getent(uid)
	}
	userNames.Store(uid, n)
	return n
}

// passwd maps the uids of /etc/passwd to their names, read once per run.
var passwd = sync.OnceValue(func() map[int]string {
	m := map[int]string{}
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return m
	}
	defer f.Close()
	parsePasswd(bufio.NewScanner(f), m)
	return m
})

// parsePasswd adds each "name:password:uid:..." line's uid and name to m,
// keeping the first name of a uid, as getpwuid(3) does.
func parsePasswd(sc *bufio.Scanner, m map[int]string) {
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 4)
		if len(f) < 4 || f[0] == "" || strings.HasPrefix(f[0], "+") || strings.HasPrefix(f[0], "-") {
			continue
		}
		uid, err := strconv.Atoi(f[2])
		if err != nil || uid < 0 {
			continue
		}
		if _, seen := m[uid]; !seen {
			m[uid] = f[0]
		}
	}
}

// getentPaths are where getent(1) is installed. It is run by absolute
// path, never looked up in PATH: doctor often runs as root, and a
// directory early in an operator's PATH is no place to take a program from.
var getentPaths = []string{"/usr/bin/getent", "/bin/getent"}

// getent asks the name service for uid's name, for at most two seconds so
// that an unreachable directory server does not stall a report.
func getent(uid int) string {
	bin := ""
	for _, p := range getentPaths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			bin = p
			break
		}
	}
	if bin == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "passwd", strconv.Itoa(uid))
	cmd.WaitDelay = time.Second // a child of an NSS module holding stdout open does not hold us
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	m := map[int]string{}
	parsePasswd(bufio.NewScanner(strings.NewReader(string(out))), m)
	return m[uid]
}

//go:build linux

// What every look through /proc needs: the initial pid namespace, whether
// /proc hides processes, whether a process is in this /proc's namespace
// (ownNS), and whether it has exited.

package kernel

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// initialPidNS is the initial pid namespace (PROC_PID_INIT_INO).
const initialPidNS = "pid:[4026531836]"

// exited reports whether pid has gone, or is a zombie or dead: a process
// in that state has closed every file it had, so it holds nothing.
func exited(pid int) bool {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err) || errors.Is(err, unix.ESRCH)
	}
	state, _, _, err := ParseStat(b)
	return err == nil && statExited(b, state)
}

// procHidesSome reports whether the /proc here leaves processes out of its
// listing (hidepid, subset), or whether that cannot be told.
func procHidesSome() bool {
	b, err := readFile("/proc/self/mountinfo")
	return err != nil || procHides(string(b))
}

// procHides reports whether the /proc mounted on top at /proc, according to
// mountinfo, leaves processes out of its listing: hidepid (other than 0 or
// off) or subset. A reader then cannot know it has seen every process.
func procHides(mountinfo string) bool {
	hides := false
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 || f[4] != "/proc" {
			continue
		}
		g := strings.Fields(post)
		if len(g) < 3 {
			hides = true // cannot tell
			continue
		}
		hides = false // the last mount on /proc is the one seen
		for _, o := range strings.Split(g[2], ",") {
			k, v, _ := strings.Cut(o, "=")
			if k == "subset" || k == "hidepid" && v != "0" && v != "off" {
				hides = true
			}
		}
	}
	return hides
}

// ownNS reports whether process pid is in the pid namespace of this /proc,
// by the NSpid line of its status (readable where ns/pid is not): one pid
// there means no namespace below this one.
func ownNS(pid string) bool {
	b, err := readFile("/proc/" + pid + "/status")
	if err != nil {
		return false
	}
	return len(nsPids(string(b))) == 1
}

package kernel

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/verdict"
)

// Detail reads what a person wants to see of a running process: its full
// command line and its user. nil when it cannot be read.
func Detail(pid int) *verdict.ProcDetail {
	p := "/proc/" + strconv.Itoa(pid)
	b, err := readFile(p + "/cmdline")
	if err != nil {
		return nil
	}
	d := &verdict.ProcDetail{Uid: -1}
	for _, a := range bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0}) {
		if len(a) > 0 || len(d.Cmdline) > 0 {
			d.Cmdline = append(d.Cmdline, string(a))
		}
	}
	if s, err := readFile(p + "/status"); err == nil {
		for _, l := range strings.Split(string(s), "\n") {
			if v, ok := strings.CutPrefix(l, "Name:"); ok {
				d.Comm = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(l, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					d.Uid, _ = strconv.Atoi(f[0])
				}
			}
		}
	}
	if d.Uid >= 0 {
		d.User = userName(d.Uid)
	}
	return d
}

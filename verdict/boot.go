package verdict

import (
	"fmt"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
)

// Judging a record by the boot it names. A boot id is read from a file,
// /proc/sys/kernel/random/boot_id, and any file can be bind-mounted over
// that path: a reader whose own boot id is such a file (Host.BootIDErr) can
// prove neither that a record is of another boot nor that it is of this
// kernel, and a writer whose boot id was one wrote a record of this boot
// that names another. So a boot-id mismatch is a premise of gone only
// where every other premise agrees: this reader's boot id is the kernel's,
// the file system is local, the record's pid is of this reader's pid
// namespace (or the record names none and this reader sees every pid
// namespace from the initial one, and none has the pid), and no recorded
// process runs with exactly the recorded start time.

// thisKernel says whether record h, on file system fs, was written by this
// kernel in this boot: its boot id is this boot's by a boot id this reader
// can trust, on a local file system (on a network one, another machine may
// share the boot id: VMs cloned from one snapshot).
func (j *Judge) thisKernel(h *scan.Holder, fs fsx.FS) bool {
	return h.BootID != "" && h.BootID == j.Host.BootID && j.Host.BootIDErr == nil && !fs.Remote
}

// otherBoot judges record h, on a local file system, whose boot id is not
// this reader's: decided is true when that gives the verdict, false when
// the mismatch proves nothing here and judging goes on (by pid namespace,
// then pid and start time).
func (j *Judge) otherBoot(h *scan.Holder) (judged, bool) {
	jd := judged{holder: h}
	out := func(v Verdict, format string, args ...any) (judged, bool) {
		jd.v, jd.reason = v, fmt.Sprintf(format, args...)
		return jd, true
	}
	if j.Host.BootIDErr != nil {
		// This reader's boot id is not the kernel's: the mismatch may be
		// its own view's, and the record this boot's.
		return jd, false
	}
	placed := h.PidNS != "" && h.PidNS == j.Host.PidNS
	if !placed && (h.PidNS != "" || !j.Host.InitialPidNS) {
		// Another pid namespace's record (a container may have a boot id
		// of its own as well as pids of its own), or one that names none
		// read where not every namespace can be seen: the namespace rule
		// judges it, as a record of another boot.
		return jd, false
	}
	boot := fmt.Sprintf("the record is from boot %s, and this is boot %s", h.BootID, j.Host.BootID)
	var ids []scan.Identity
	if h.HasStart {
		ids = append([]scan.Identity{{Pid: h.Pid, Start: h.Start}}, h.Also...)
	} else if !placed && h.Pid > 0 && h.Pid <= j.Host.PidMax {
		if why := j.elsewhere(int(h.Pid)); why != "" {
			return out(Unknown, "%s, but the record does not say which pid namespace wrote it, and %s", boot, why)
		}
	}
	for _, id := range ids {
		if id.Pid <= 0 || id.Pid > j.Host.PidMax {
			continue // names no process here
		}
		pid := int(id.Pid)
		p := j.Probe.Probe(pid)
		switch p.State {
		case StateUnknown:
			return out(Unknown, "%s, but whether pid %d is running cannot be told (%s), and a boot id is only a file: its writer may have read one mounted over the kernel's", boot, pid, errText(p.Err))
		case StateRunning:
			switch {
			case !p.HasStart:
				return out(Unknown, "%s, but pid %d is running and its start time cannot be read (%s), and a boot id is only a file: its writer may have read one mounted over the kernel's", boot, pid, errText(p.Err))
			case p.Start == id.Start:
				// The start time is this kernel's count since this boot:
				// a process of another boot matching it to the tick is
				// less likely than a writer with a boot id of its own.
				return out(Unknown, "%s, but pid %d (%s) is running with exactly the recorded start time (%d): its writer may have read a boot id mounted over the kernel's (a sandbox's); judge it where it was written", boot, pid, p.Comm, id.Start)
			}
		}
		if !placed {
			// Absent here, or another process: a container's process
			// may have the pid in its namespace (and a boot id of its
			// own).
			if why := j.elsewhere(pid); why != "" {
				return out(Unknown, "%s, but the record does not say which pid namespace wrote it, and %s", boot, why)
			}
		}
	}
	facts := []Fact{{OtherBoot, "this reader's boot id, procfs's own sys/kernel/random/boot_id, against the record's (a local disk)", ""}}
	if placed {
		facts = append(facts, Fact{NoNamesake, "the record, which names this pid namespace", ""})
	} else {
		facts = append(facts, j.namesakes(false))
	}
	return proved(jd, boot+": its holder ended with that boot", facts...), true
}

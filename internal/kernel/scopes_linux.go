//go:build linux

// Which scopes are in use (ScopeInUse): every process's pid namespace and
// the machine id under its root, read as that process would (firstLineIn).

package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// ScopeInUse implements ScopeWitness. It reads /proc/*/ns/pid once, and the
// machine id under each process's root (once per root), as a writer there
// would have read it.
func (k *KernelEvidence) ScopeInUse(scope string, h verdict.Host) (bool, bool) {
	k.scopesOnce.Do(func() {
		// A process's root may be a hung FUSE or NFS mount: the look gets
		// a deadline, past which it is incomplete. (The goroutine left
		// waiting is killed with the process.)
		type answer struct {
			scopes   map[string]bool
			complete bool
		}
		done := make(chan answer, 1)
		go func() {
			s, c := nsScopes(h)
			done <- answer{s, c}
		}()
		select {
		case a := <-done:
			k.scopes, k.scopesComplete = a.scopes, a.complete
		case <-time.After(scopeDeadline):
			k.scopes, k.scopesComplete = map[string]bool{}, false
		}
	})
	return k.scopes[scope], k.scopesComplete
}

// scopeDeadline bounds the look at every process's machine id.
const scopeDeadline = 3 * time.Second

func nsScopes(h verdict.Host) (map[string]bool, bool) {
	scopes := map[string]bool{}
	if h.BootID == "" || procOurs() != nil {
		return scopes, false
	}
	complete := true
	if procHidesSome() {
		complete = false
	}
	own, err := os.Readlink("/proc/self/ns/pid")
	if err != nil || own != initialPidNS {
		complete = false // other namespaces are out of sight
	}
	if h.MachineID != "" && own != "" {
		scopes[verdict.ScopeDigest(h.MachineID, h.BootID, own)] = true
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return scopes, false
	}
	ids := map[rootKey]string{}     // machine id under each root read
	bootIDs := map[rootKey]string{} // boot id under each root read
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		ns, err := os.Readlink("/proc/" + e.Name() + "/ns/pid")
		switch {
		case err == nil:
		case os.IsNotExist(err) || errors.Is(err, unix.ESRCH):
			continue // exited
		case ownNS(e.Name()):
			// Its namespace link may not be read, but its status says it
			// has a pid in no namespace below this one.
			ns = own
		default:
			complete = false
			continue
		}
		// The boot id it would hash is the one under its root too: a file
		// mounted over the kernel's there (a sandbox's) is hashed as read.
		boots := []string{h.BootID}
		switch b, err := bootIDIn(e.Name(), bootIDs); {
		case err == nil:
			boots = append(boots, b)
		case os.IsNotExist(err) || errors.Is(err, unix.ESRCH):
		default:
			complete = false
		}
		for _, boot := range boots {
			if h.MachineID != "" {
				scopes[verdict.ScopeDigest(h.MachineID, boot, ns)] = true
			}
		}
		// The machine id the process would hash is the one under its root.
		id, err := machineIDIn(e.Name(), ids)
		switch {
		case err == nil:
			for _, boot := range boots {
				scopes[verdict.ScopeDigest(id, boot, ns)] = true
			}
		case os.IsNotExist(err) || errors.Is(err, unix.ESRCH):
			// None there (or it exited): nothing it writes carries a scope.
		default:
			// A root this process may not look into (another namespace's,
			// or a more privileged process's of this one, such as a
			// sandbox's pid 1): a writer there may use a machine id never
			// seen here.
			complete = false
		}
	}
	return scopes, complete
}

// rootKey names a process's root: the mount it is on, and its directory.
type rootKey struct {
	mnt, dev, ino uint64
}

// machineIDIn reads the first line of etc/machine-id under the root of
// process pid, as that process would: resolved inside its root
// (RESOLVE_IN_ROOT, so an absolute link there means its root, not this
// one's), never through a magic link, without blocking on a FIFO or a
// device, and at most 64 bytes of a regular file. ids remembers the id
// under each root already read, so that each is read once. A root is its
// mount (each mount namespace has its own, so a file mounted over
// /etc/machine-id in one is seen there) and its directory (a chroot); where
// the kernel gives no mount id, nothing is remembered.
func machineIDIn(pid string, ids map[rootKey]string) (string, error) {
	return firstLineIn(pid, "etc/machine-id", ids)
}

// firstLineIn reads the first line of the file rel under the root of
// process pid, as that process would (machineIDIn's rules), remembering it
// in cache by root. A file that is not there, or is empty, gives
// fs.ErrNotExist; one that is not a regular file, an error.
func firstLineIn(pid, rel string, cache map[rootKey]string) (string, error) {
	rfd, err := unix.Open("/proc/"+pid+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(rfd)
	var stx unix.Statx_t
	if err := unix.Statx(rfd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_INO|unix.STATX_MNT_ID, &stx); err != nil {
		return "", err
	}
	root := rootKey{stx.Mnt_id, unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		root = rootKey{} // no mount id: read every time
	}
	if line, ok := cache[root]; ok && root != (rootKey{}) {
		if line == "" {
			return "", fs.ErrNotExist
		}
		return line, nil
	}
	fd, err := unix.Openat2(rfd, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == unix.ENOENT || err == unix.ENOTDIR {
		remember(cache, root, "")
		return "", fs.ErrNotExist
	}
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", fmt.Errorf("/proc/%s/root/%s is not a regular file", pid, rel)
	}
	buf := make([]byte, 64)
	n, err := retryFd(func() (int, error) { return unix.Read(fd, buf) })
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	if line = strings.TrimSpace(line); line == "" {
		remember(cache, root, "")
		return "", fs.ErrNotExist // empty: nothing from there (no scope)
	}
	remember(cache, root, line)
	return line, nil
}

func remember(ids map[rootKey]string, root rootKey, id string) {
	if root != (rootKey{}) {
		ids[root] = id
	}
}

package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// GitWorkers implements verdict.RepoWitness: every running git process
// (a command name starting "git") whose repository, resolved as git
// resolves it (GIT_COMMON_DIR, GIT_DIR, else up from its working
// directory, which -C has already changed), is the common git directory
// dev:ino. It looks through each process's own /proc/<pid>/cwd and root,
// so a git in a container or behind a bind mount is seen by inode, not by
// path. complete is false when this reader does not see every process, or
// a git process's working directory or environment cannot be read.
//
// The look at every process is taken once per run and shared by every git
// lock judged in it, except with Fresh: a judgement again before a removal
// looks afresh, for a git that started since.
func (k *KernelEvidence) GitWorkers(dev, ino uint64) ([]verdict.KernelHolder, bool) {
	var g gitLook
	if k.Fresh {
		g = scanGit()
	} else {
		k.gitOnce.Do(func() { k.git = scanGit() })
		g = k.git
	}
	if !g.ok {
		return nil, false
	}
	var hs []verdict.KernelHolder
	for _, p := range g.procs {
		if p.dev == dev && p.ino == ino {
			hs = append(hs, verdict.KernelHolder{Pid: p.pid, Comm: p.comm, How: "works in the repository"})
		}
	}
	return hs, g.complete
}

// gitLook is one look at every running git process: the repository each
// works in (by its common git directory's device and inode), and whether
// every one could be told.
type gitLook struct {
	procs    []gitProc
	complete bool
	ok       bool
}

type gitProc struct {
	pid      int
	comm     string
	dev, ino uint64
}

func scanGit() gitLook {
	complete := wholeView() == nil
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return gitLook{}
	}
	self := os.Getpid()
	var procs []gitProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := readFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since the listing
		}
		state, comm, _, err := ParseStat(b)
		if err != nil || !strings.HasPrefix(comm, "git") || statExited(b, state) {
			continue
		}
		d, i, found, err := gitRepoOfProc(pid)
		switch {
		case err != nil:
			if _, serr := os.Stat("/proc/" + e.Name()); serr == nil {
				complete = false // running, and its repository cannot be told
			}
		case found:
			procs = append(procs, gitProc{pid: pid, comm: comm, dev: d, ino: i})
		}
	}
	return gitLook{procs: procs, complete: complete, ok: true}
}

// gitRepoOfProc finds the common git directory that process pid works in.
// found is false when it works in none (git init, git clone).
func gitRepoOfProc(pid int) (dev, ino uint64, found bool, err error) {
	p := "/proc/" + strconv.Itoa(pid)
	env, err := readFile(p + "/environ")
	if err != nil {
		return 0, 0, false, err
	}
	cwd, root := p+"/cwd", p+"/root"
	if _, err := os.Stat(cwd); err != nil {
		return 0, 0, false, err
	}
	in := func(base, q string) string {
		if filepath.IsAbs(q) {
			return root + q
		}
		return base + "/" + q
	}
	var gitDir, common string
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("GIT_DIR=")); ok && len(v) > 0 {
			gitDir = in(cwd, string(v))
		}
		if v, ok := bytes.CutPrefix(kv, []byte("GIT_COMMON_DIR=")); ok && len(v) > 0 {
			common = in(cwd, string(v))
		}
	}
	if gitDir == "" && common == "" {
		gitDir = findGitDir(cwd, in)
	}
	if common == "" && gitDir != "" {
		common = gitDir
		if b, err := os.ReadFile(gitDir + "/commondir"); err == nil {
			common = in(gitDir, strings.TrimSpace(string(b)))
		}
	}
	if common == "" {
		return 0, 0, false, nil
	}
	fi, err := os.Stat(common)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	dev, ino, ok := fsx.DevIno(fi)
	return dev, ino, ok, nil
}

// findGitDir walks up from dir, as git does, to the git directory it is
// in or under: dir itself, or a .git directory, or the directory a .git
// file ("gitdir: <path>", a worktree's or a submodule's) names.
func findGitDir(dir string, in func(base, q string) string) string {
	cand := dir
	for i := 0; i < 256; i++ {
		if scan.IsGitDir(cand) {
			return cand
		}
		g := cand + "/.git"
		if fi, err := os.Lstat(g); err == nil {
			switch {
			case fi.IsDir() && scan.IsGitDir(g):
				return g
			case fi.Mode().IsRegular():
				if b, err := os.ReadFile(g); err == nil {
					if v, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
						return in(cand, strings.TrimSpace(v))
					}
				}
			}
		}
		up := cand + "/.."
		a, err1 := os.Stat(cand)
		b, err2 := os.Stat(up)
		if err1 != nil || err2 != nil || os.SameFile(a, b) {
			return "" // the root of its file system tree
		}
		cand = up
	}
	return ""
}

// ShmInUse implements verdict.ShmWitness, as PostgreSQL's
// PGSharedMemoryIsInUse (src/backend/port/sysv_shmem.c) does:
// shmctl(IPC_STAT) on the segment id of line 7. No such id (EINVAL): not
// in use, known only when every process on the machine shares this
// reader's IPC namespace (a container's segment is invisible here); any
// other failure (EACCES, EIDRM) is doubt. No process attached: not in use.
// Attached: in use, unless the segment is proved another's the way
// PostgreSQL proves it, by its header (shmat read-only): PostgreSQL's
// magic number without the data directory's device and inode, or no
// PostgreSQL header at all. Its key is no proof: a segment marked for
// removal (ipcrm, IPC_RMID) reads key 0 while its backends stay attached.
func (k *KernelEvidence) ShmInUse(key, id uint64, dataDir string) (inUse, known bool) {
	if id > 1<<31-1 {
		return false, false
	}
	var ds unix.SysvShmDesc
	_, err := unix.SysvShmCtl(int(id), unix.IPC_STAT, &ds)
	switch {
	case errors.Is(err, unix.EINVAL):
		return false, oneIPCNamespace()
	case err != nil:
		return false, false
	case ds.Nattch == 0:
		if uint64(uint32(ds.Perm.Key)) == key {
			return false, true
		}
		return false, oneIPCNamespace()
	}
	switch pgSegmentOf(int(id), dataDir) {
	case segOther:
		return false, oneIPCNamespace()
	case segUnknown:
		return true, false
	}
	return true, true
}

// What a segment's header says of whose it is.
const (
	segOurs    = iota // PostgreSQL's, for this data directory
	segOther          // not PostgreSQL's, or another data directory's
	segUnknown        // could not be read
)

// pgShmemMagic is PGShmemMagic (src/include/storage/pg_shmem.h), the
// first 32 bits of every PostgreSQL segment.
const pgShmemMagic = 679834894

// pgSegmentOf reads the header of segment id, attached read-only, as
// PostgreSQL does: its magic number, and the device and inode of the data
// directory it was made for. The header's layout has changed between
// versions (fields added before device and inode), so the pair is looked
// for as two native 64-bit words anywhere in its first 256 bytes, where
// every version keeps it.
func pgSegmentOf(id int, dataDir string) int {
	var st unix.Stat_t
	if err := unix.Stat(dataDir, &st); err != nil {
		return segUnknown
	}
	b, err := unix.SysvShmAttach(id, 0, unix.SHM_RDONLY)
	if err != nil {
		return segUnknown
	}
	defer unix.SysvShmDetach(b)
	if len(b) < 4 || int32(binary.NativeEndian.Uint32(b)) != pgShmemMagic {
		return segOther
	}
	head := b[:min(len(b), 256)]
	for off := 8; off+16 <= len(head); off += 8 {
		if binary.NativeEndian.Uint64(head[off:]) == uint64(st.Dev) && binary.NativeEndian.Uint64(head[off+8:]) == st.Ino {
			return segOurs
		}
	}
	return segOther
}

// oneIPCNamespace reports whether every process on the machine is in this
// reader's IPC namespace, and this reader sees them all.
func oneIPCNamespace() bool {
	if wholeView() != nil {
		return false
	}
	mine, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		ns, err := os.Readlink("/proc/" + e.Name() + "/ns/ipc")
		if err != nil {
			if _, serr := os.Stat("/proc/" + e.Name()); serr == nil {
				return false // running, and its namespace cannot be read
			}
			continue
		}
		if ns != mine {
			return false
		}
	}
	return true
}

package kernel

import (
	"encoding/binary"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// pgSegment makes a System V segment headed as PostgreSQL heads its own
// (PGShmemMagic, then, in PostgreSQL 15's layout, the data directory's
// device and inode at bytes 40 and 48) for the directory dir, attached by
// this process until the test ends, and returns its id.
func pgSegment(t *testing.T, key int, dir string) int {
	t.Helper()
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	if err != nil {
		t.Skipf("cannot make a System V segment here: %v", err)
	}
	b, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	binary.NativeEndian.PutUint32(b, pgShmemMagic)
	binary.NativeEndian.PutUint64(b[40:], st.Dev)
	binary.NativeEndian.PutUint64(b[48:], st.Ino)
	t.Cleanup(func() {
		unix.SysvShmDetach(b)
		unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	})
	return id
}

// TestShmInUseMarkedForRemoval: a segment marked for removal (ipcrm -m,
// IPC_RMID) while a backend is attached reads key 0, and is still the
// cluster's and in use: attached means held (issue 41, item 3). Only a
// header naming another data directory proves a segment another's.
func TestShmInUseMarkedForRemoval(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to read any segment")
	}
	data, other := t.TempDir(), t.TempDir()
	key := 0x10c7c000 + os.Getpid()%0x1000
	id := pgSegment(t, key, data)
	k := &KernelEvidence{}
	if used, known := k.ShmInUse(uint64(key), uint64(id), data); !used || !known {
		t.Fatalf("an attached segment of the data directory: in use %v, known %v; want in use, known", used, known)
	}
	if _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); err != nil {
		t.Fatal(err)
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil || ds.Perm.Key != 0 {
		t.Fatalf("the marked segment's key is %#x (%v), want 0: the case this test is about did not happen", ds.Perm.Key, err)
	}
	if used, known := k.ShmInUse(uint64(key), uint64(id), data); !used || !known {
		t.Errorf("an attached segment marked for removal: in use %v, known %v; want in use, known", used, known)
	}
	if used, _ := k.ShmInUse(uint64(key), uint64(id), other); used {
		t.Errorf("an attached segment whose header names another data directory: in use, want not")
	}
}

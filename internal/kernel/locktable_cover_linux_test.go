//go:build linux

package kernel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/internal/fsx"
	"golang.org/x/sys/unix"
)

// TestLockTableCover: a whole lock table covers a file only where it lists
// it under a device known to be the file's: its mount's (mountinfo's third
// field, the superblock's) when that is the file's st_dev; on btrfs the
// superblock's instead, shared among subvolumes; anything else (overlayfs,
// an unknown mount) is not covered. A table that is not whole covers
// nothing, and says why where it knows.
func TestLockTableCover(t *testing.T) {
	const mi = "30 1 0:46 / /mnt/b rw - btrfs /dev/loop0 rw\n" +
		"31 1 0:56 / /mnt/o rw - overlay overlay rw\n" +
		"32 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
	whole := lockTable{ok: true, whole: true, mountinfo: mi}
	dev := unix.Mkdev
	for _, tc := range []struct {
		name      string
		t         lockTable
		info      fsx.Stat
		wantDev   uint64
		wantWhole bool
		shared    bool
		doubt     bool
	}{
		{"ext4", whole, fsx.Stat{Dev: dev(8, 1), Ino: 12, Mount: 32, HasMount: true}, dev(8, 1), true, false, false},
		{"btrfs subvolume", whole, fsx.Stat{Dev: dev(0, 48), Ino: 257, Mount: 30, HasMount: true}, dev(0, 46), true, true, false},
		{"btrfs same dev", whole, fsx.Stat{Dev: dev(0, 46), Ino: 257, Mount: 30, HasMount: true}, dev(0, 46), true, true, false},
		{"overlay layer dev", whole, fsx.Stat{Dev: dev(0, 57), Ino: 2, Mount: 31, HasMount: true}, dev(0, 57), false, false, true},
		{"overlay dir", whole, fsx.Stat{Dev: dev(0, 56), Ino: 3, Mount: 31, HasMount: true}, dev(0, 56), true, false, false},
		{"mount not listed", whole, fsx.Stat{Dev: dev(8, 1), Ino: 12, Mount: 99, HasMount: true}, dev(8, 1), false, false, true},
		{"mount unknown", whole, fsx.Stat{Dev: dev(8, 1), Ino: 12}, dev(8, 1), false, false, true},
		{"child namespace", lockTable{ok: true, mountinfo: mi}, fsx.Stat{Dev: dev(8, 1), Ino: 12, Mount: 32, HasMount: true}, dev(8, 1), false, false, false},
		{"shadowed", lockTable{ok: true, doubt: "not procfs's", mountinfo: mi}, fsx.Stat{Dev: dev(8, 1), Ino: 12, Mount: 32, HasMount: true}, dev(8, 1), false, false, true},
		{"unread", lockTable{}, fsx.Stat{Dev: dev(8, 1), Ino: 12, Mount: 32, HasMount: true}, dev(8, 1), false, false, false},
	} {
		c := tc.t.cover("", "", tc.info)
		if c.Dev != tc.wantDev || c.Whole != tc.wantWhole || (c.Shared != "") != tc.shared || (c.Doubt != "") != tc.doubt {
			t.Errorf("%s: cover = %+v; want dev %d:%d, whole %v, shared %v, doubt %v", tc.name, c, unix.Major(tc.wantDev), unix.Minor(tc.wantDev), tc.wantWhole, tc.shared, tc.doubt)
		}
	}
}

// TestLockTableCoverHere: fsx's stat gives the mount id, and on this
// machine's test directory the table read covers the file under its own
// device; without the mount id, the file is found through its directory.
func TestLockTableCoverHere(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := fsx.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, err := d.Lstat("x.lock")
	if err != nil {
		t.Fatal(err)
	}
	if !st.HasMount {
		t.Skip("the kernel gives no mount id (STATX_MNT_ID, Linux 5.8)")
	}
	tab := readLockTable()
	if !tab.ok || !tab.whole {
		t.Skipf("the lock table here is not whole (ok %v, %s)", tab.ok, tab.doubt)
	}
	m, ok := mountByID(tab.mountinfo, st.Mount)
	if !ok {
		t.Fatalf("mount %d of %s is not in mountinfo", st.Mount, dir)
	}
	if m.dev != st.Dev && m.fstype != "btrfs" {
		t.Skipf("the test directory is on %s, whose files' st_dev is not its mount's", m.fstype)
	}
	for _, info := range []fsx.Stat{st, {Dev: st.Dev, Ino: st.Ino}} {
		if c := tab.cover(dir, "x.lock", info); !c.Whole || c.Dev != m.dev {
			t.Errorf("cover(%+v) = %+v; want whole, under %d:%d", info, c, unix.Major(m.dev), unix.Minor(m.dev))
		}
	}
	if c := tab.cover("", "", fsx.Stat{Dev: st.Dev, Ino: st.Ino}); c.Whole {
		t.Errorf("cover without a mount id or a path = %+v; want not whole", c)
	}
}

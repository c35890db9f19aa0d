//go:build linux

package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/verdict"
	"golang.org/x/sys/unix"
)

// bootIDViewEnv makes TestBootIDView print what LocalHost says of the boot
// id, as JSON: the test binary is re-run so inside a mount namespace that
// TestBootIDTrust has changed.
const bootIDViewEnv = "LOCKCTL_TEST_BOOT_ID_VIEW"

type bootIDView struct {
	BootID    string `json:"boot_id"`
	BootIDErr string `json:"boot_id_err"`
	Initial   bool   `json:"initial"`
}

// TestBootIDView is not a test: TestBootIDTrust runs it in a mount
// namespace of its making.
func TestBootIDView(t *testing.T) {
	if os.Getenv(bootIDViewEnv) == "" {
		t.Skip("run by TestBootIDTrust")
	}
	h := LocalHost()
	json.NewEncoder(os.Stdout).Encode(bootIDView{h.BootID, errString(h.BootIDErr), h.InitialPidNS})
}

// TestBootIDTrust: the boot id is the kernel's word only when it is read
// through procfs's own boot_id, however that is mounted; a plain file
// bound over it, another proc file bound over it (random/uuid), or a
// directory bound over /proc/sys/kernel/random is not (issue 28, case 4).
func TestBootIDTrust(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare -m and mount need root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare (util-linux)")
	}
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		t.Fatal(err)
	}
	real := strings.TrimSpace(string(b))
	if h := LocalHost(); h.BootID != real || h.BootIDErr != nil || !h.InitialPidNS {
		t.Fatalf("LocalHost() here = boot %q (%v), initial pid namespace %v; want %q, trusted, true", h.BootID, h.BootIDErr, h.InitialPidNS, real)
	}
	const fake = "11111111-2222-4333-8444-555555555555"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "boot_id"), []byte(fake+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	random := filepath.Join(dir, "random")
	if err := os.Mkdir(random, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(random, "boot_id"), []byte(fake+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "proc")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, setup string
		// id is the boot id read ("" for any), trusted whether it is the
		// kernel's, why a part of the reason when it is not.
		id      string
		trusted bool
		why     string
	}{
		{"nothing-mounted", "true", real, true, ""},
		{"a-plain-file", "mount --bind " + filepath.Join(dir, "boot_id") + " " + bootIDPath, fake, false, "not on procfs"},
		{"random-uuid", "mount --bind /proc/sys/kernel/random/uuid " + bootIDPath, "", false, "procfs's /sys/kernel/random/uuid"},
		{"a-directory", "mount --bind " + random + " /proc/sys/kernel/random", fake, false, "not on procfs"},
		// The kernel's own file, however mounted, is the kernel's: bound
		// onto itself, in a directory bound over its own, in a new procfs,
		// from a procfs mounted elsewhere.
		{"in-a-directory-over-it", "mount --bind /proc/sys/kernel/random/boot_id " + filepath.Join(random, "boot_id") + " && mount --rbind " + random + " /proc/sys/kernel/random", real, true, ""},
		{"itself", "mount --bind " + bootIDPath + " " + bootIDPath, real, true, ""},
		{"a-new-procfs", "mount -t proc proc /proc", real, true, ""},
		{"procfs-random-from-elsewhere", "mount -t proc proc " + other + " && mount --bind " + other + "/sys/kernel/random /proc/sys/kernel/random", real, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("unshare", "-m", "sh", "-c", tc.setup+` && exec "$0" -test.run='^TestBootIDView$'`, self)
			cmd.Env = append(os.Environ(), bootIDViewEnv+"=1")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("unshare -m sh -c %q: %v\n%s", tc.setup, err, out)
			}
			line, _, _ := strings.Cut(string(out), "\n")
			var got bootIDView
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if tc.id != "" && got.BootID != tc.id {
				t.Errorf("BootID = %q, want %q", got.BootID, tc.id)
			}
			if tc.trusted && got.BootIDErr != "" {
				t.Errorf("BootIDErr = %q, want none: it is the kernel's", got.BootIDErr)
			}
			if !tc.trusted && (got.BootIDErr == "" || !strings.Contains(got.BootIDErr, tc.why)) {
				t.Errorf("BootIDErr = %q, want one saying %q", got.BootIDErr, tc.why)
			}
			if !got.Initial {
				t.Errorf("InitialPidNS = false in a mount namespace of the initial pid namespace")
			}
		})
	}
}

// TestFdMountID: the mount id statx gives and the one fdinfo gives (the
// fallback before Linux 5.8) agree.
func TestFdMountID(t *testing.T) {
	f, err := os.Open(bootIDPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err1 := fdMountID(int(f.Fd()))
	b, err2 := fdinfoMountID(int(f.Fd()))
	if err1 != nil || err2 != nil || a != b || a == 0 {
		t.Errorf("fdMountID = %d, %v; fdinfoMountID = %d, %v; want the same id", a, err1, b, err2)
	}
}

func TestMountByID(t *testing.T) {
	const mi = "22 1 0:21 / /proc rw,nosuid - proc proc rw\n" +
		"97 22 0:5 /sys/kernel/random/uuid /proc/sys/kernel/random/boot_id rw - proc proc rw\n" +
		"98 1 8:1 /home/a\\040b /mnt/a\\040b rw shared:1 - ext4 /dev/sda1 rw\n"
	for _, tc := range []struct {
		id   uint64
		want mountEntry
		ok   bool
	}{
		{22, mountEntry{"/", "/proc", "proc", unix.Mkdev(0, 21)}, true},
		{97, mountEntry{"/sys/kernel/random/uuid", "/proc/sys/kernel/random/boot_id", "proc", unix.Mkdev(0, 5)}, true},
		{98, mountEntry{"/home/a b", "/mnt/a b", "ext4", unix.Mkdev(8, 1)}, true},
		{99, mountEntry{}, false},
	} {
		if got, ok := mountByID(mi, tc.id); got != tc.want || ok != tc.ok {
			t.Errorf("mountByID(%d) = %+v, %v; want %+v, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
}

// TestScopesHashShadowedBootIDs: the scopes of this boot's pid namespaces
// are hashed with the boot id each process sees under its root, so a
// writer whose boot id is a file bound over the kernel's is found by the
// scope it wrote (the before-boot rule).
func TestScopesHashShadowedBootIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare -m and mount need root")
	}
	h := LocalHost()
	if h.MachineID == "" || h.BootIDErr != nil {
		t.Skipf("no scope here: %v %v", h.ScopeErr, h.BootIDErr)
	}
	const fake = "11111111-2222-4333-8444-555555555555"
	file := filepath.Join(t.TempDir(), "boot_id")
	if err := os.WriteFile(file, []byte(fake+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("unshare", "-m", "sh", "-c", "mount --bind "+file+" "+bootIDPath+` && exec sleep 600`)
	if err := c.Start(); err != nil {
		t.Skipf("unshare: %v", err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	testutil.WaitFor(t, 10*time.Second, "the shadowed sleeper", func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.Process.Pid))
		return string(b) == "sleep\n"
	})
	if got, err := bootIDIn(strconv.Itoa(c.Process.Pid), map[rootKey]string{}); err != nil || got != fake {
		t.Fatalf("bootIDIn(the shadowed sleeper) = %q, %v; want %s", got, err, fake)
	}
	scopes, _ := nsScopes(h)
	if want := verdict.ScopeDigest(h.MachineID, fake, h.PidNS); !scopes[want] {
		t.Errorf("nsScopes lacks the scope of the shadowed mount namespace (machine id, %s, %s)", fake, h.PidNS)
	}
	if !scopes[h.Scope] {
		t.Errorf("nsScopes lacks this reader's own scope")
	}
}

//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// TestCargoLockIsNotALock: a Cargo.lock that cargo itself writes (offline,
// for a crate with no dependencies) is data, not a lock (issue 42): doctor
// exits 0 with no verdict and no remedy and lists it under not_locks,
// --fix --legacy-older-than 1s leaves it byte for byte, and acquire
// refuses it. The producers' other manifests, whose tools are not
// installed here, are in testdata/script/not_locks_manifests.txtar.
func TestCargoLockIsNotALock(t *testing.T) {
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		cargo = filepath.Join(os.Getenv("HOME"), ".cargo", "bin", "cargo") // rustup's
		if _, err := os.Stat(cargo); err != nil {
			t.Skip("cargo is not installed")
		}
	}
	r := lcNewReaper(t)
	dir := t.TempDir()
	crate := filepath.Join(dir, "demo")
	if err := os.MkdirAll(filepath.Join(crate, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(crate, "Cargo.toml"), []byte("[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n"))
	testutil.WriteFile(t, filepath.Join(crate, "src", "main.rs"), []byte("fn main() {}\n"))
	p := r.start([]string{"CARGO_HOME=" + t.TempDir()}, cargo, "generate-lockfile", "--offline", "--manifest-path", filepath.Join(crate, "Cargo.toml"))
	if code := p.wait(120 * time.Second); code != 0 {
		t.Fatalf("cargo generate-lockfile: exit %d\n%s", code, p.errText())
	}
	lock := filepath.Join(crate, "Cargo.lock")
	before, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}

	res := r.mustLockctl(0, "doctor", "--json", dir)
	var doc struct {
		Locks    []lcLock `json:"locks"`
		NotLocks []struct {
			Path, Format, What string
		} `json:"not_locks"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, res.stdout)
	}
	if len(doc.Locks) != 0 || len(doc.NotLocks) != 1 || doc.NotLocks[0].Path != lock || doc.NotLocks[0].Format != "cargo-lockfile" {
		t.Fatalf("doctor --json on cargo's Cargo.lock: locks %+v, not_locks %+v; want no lock and it under not_locks", doc.Locks, doc.NotLocks)
	}
	res = r.mustLockctl(0, "doctor", dir)
	if strings.Contains(res.stdout, "rm -- ") || !strings.Contains(res.stdout, "1 file named like a lock is data, not a lock") {
		t.Fatalf("doctor on cargo's Cargo.lock:\n%s", res.stdout)
	}
	r.mustLockctl(0, "doctor", "--fix", "--legacy-older-than", "1s", dir)
	after, err := os.ReadFile(lock)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("--fix --legacy-older-than 1s changed cargo's Cargo.lock: %v", err)
	}
	res = r.mustLockctl(2, "acquire", "--timeout", "1s", lock)
	if !strings.Contains(res.stderr, "it is data, not a lock") {
		t.Fatalf("acquire Cargo.lock: %s", res.stderr)
	}
}

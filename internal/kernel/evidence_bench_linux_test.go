//go:build linux

package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/internal/dev/testutil"
)

// BenchmarkEvidenceGather times one look at every process's open files
// (what a doctor run pays once), on this machine's processes plus 300
// single-threaded ones (sleep) and 20 multi-threaded ones (Go holders):
//
//	go test ./internal/kernel -run '^$' -bench Evidence -benchtime 3x
func BenchmarkEvidenceGather(b *testing.B) {
	for range 300 {
		cmd := exec.Command("sleep", "3600")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	p := filepath.Join(b.TempDir(), "bench.lock")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	for range 20 {
		testutil.StartHolder(b, "open", p)
	}
	b.ResetTimer()
	for range b.N {
		(&KernelEvidence{}).Unseen()
	}
}

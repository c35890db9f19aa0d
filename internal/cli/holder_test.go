package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestHolderPidRefusesItself: --holder-pid naming lockctl's own process
// would record a holder that exits at once, so the lock would read gone
// as soon as acquire returned: a usage error, and nothing made.
func TestHolderPidRefusesItself(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Run([]string{"lockctl", "acquire", "--holder-pid", strconv.Itoa(os.Getpid()), filepath.Join(dir, "x.lock")}, &stdout, &stderr)
	if code != ExitError || !strings.Contains(stderr.String(), "is this lockctl, which exits as soon as it is done") {
		t.Errorf("acquire --holder-pid <its own pid>: exit %d\n%s", code, stderr.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("acquire --holder-pid <its own pid> left %v", ents)
	}
}

package verdict

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockctl/lockctl/scan"
)

// TestLibreOfficeNoRemedy: a LibreOffice lock of this host records no
// pid and is rewritten in place when LibreOffice takes it over: owner-less,
// with no remedy and the reason, whatever its age.
func TestLibreOfficeNoRemedy(t *testing.T) {
	fx := readFixture(t, filepath.Join(fixtureDir("libreoffice"), "ownerless-this-host.txtar"))
	fx.age = "240h"
	l := fx.build(t, t.TempDir())
	got := fx.judge(t, l)
	if got.Verdict != Ownerless || len(got.Remove) != 0 || !slices.Contains(got.Notes, scan.LibreOfficeInPlace) {
		t.Errorf("Judge(%s) = %s, remove %v, notes %q; want ownerless, no remedy, the in-place note", fx.file, got.Verdict, got.Remove, got.Notes)
	}
	if scan.InPlace(l) == "" {
		t.Errorf("InPlace(%s) = \"\", want LibreOffice's in-place reason", fx.file)
	}
}

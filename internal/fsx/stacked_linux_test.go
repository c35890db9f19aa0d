//go:build linux

package fsx

import (
	"reflect"
	"testing"
)

// TestStackedLayers: the layers a stacked mount's mountinfo line names,
// with mountinfo's octal escapes and overlay's backslash escapes undone.
func TestStackedLayers(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    mountEntry
		want []string
	}{
		{"overlay", mountEntry{"overlay", "overlay", `rw,lowerdir=/l1:/l2,upperdir=/u,workdir=/w,uuid=on`}, []string{"/l1", "/l2", "/u"}},
		{"overlay-escapes", mountEntry{"overlay", "overlay", `rw,lowerdir=/tmp/l\134:x:/tmp/a\040b,upperdir=/u,workdir=/w`}, []string{"/tmp/l:x", "/tmp/a b", "/u"}},
		{"overlay-data-layers", mountEntry{"overlay", "overlay", `rw,lowerdir=/l1::/d1,upperdir=/u,workdir=/w`}, []string{"/l1", "/d1", "/u"}},
		{"overlay-append-layers", mountEntry{"overlay", "overlay", `rw,lowerdir+=/l1,lowerdir+=/l2,datadir+=/a\040b,upperdir=/u,workdir=/w`}, []string{"/l1", "/l2", "/a b", "/u"}},
		{"overlay-read-only", mountEntry{"overlay", "overlay", `ro,lowerdir=/l1:/l2`}, []string{"/l1", "/l2"}},
		{"overlay-no-layers", mountEntry{"overlay", "overlay", `rw`}, nil},
		{"ecryptfs", mountEntry{"ecryptfs", `/home/.ecryptfs/a\040b/.Private`, `rw,ecryptfs_sig=0123`}, []string{"/home/.ecryptfs/a b/.Private"}},
		{"not-stacked", mountEntry{"ext4", "/dev/vda", "rw"}, nil},
	} {
		if got := tc.m.layers(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("layers(%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

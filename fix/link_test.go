//go:build linux

package fix_test

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/lockctl/lockctl/fix"
	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// TestLinkClaimSweeps: where RENAME_NOREPLACE is refused, a gone lock file
// is claimed by link(2), checked, and removed with its claim; a live one is
// not touched.
func TestLinkClaimSweeps(t *testing.T) {
	host := testHost(t)
	dir := tempDir(t)
	gone := mkFile(t, dir, "a.lock", fileRec(testutil.Gone(t)))
	f := fix.WithoutRenameNoReplace(fix.New(judges.Sweep(host)))
	linked := false
	f.Hook = func(s fix.Step, _ *scan.Lock) { linked = linked || s == fix.BeforeUnlink }
	wantOutcome(t, gone, f.Fix(judge(t, dir, gone, verdict.Gone)), fix.Removed, "judged it again and removed")
	if !linked {
		t.Errorf("the claim did not take the link(2) way")
	}
	if exists(gone) {
		t.Errorf("%s is still there", gone)
	}
	noDebris(t, dir)
}

// TestLinkClaimAgainstAnotherSweeper: sweeper A has read a gone lock
// again and is about to claim it when sweeper B links its own claim of it,
// checks it, and is about to remove the lock's name. A must see B's claim
// (three names) and leave the lock to B. Had A gone on, removing the name
// and the lock, a live acquirer could take the name A freed, and B's
// unlink by name would then remove the acquirer's live lock. Red without
// the link count check (mutant link-claim-count-unchecked).
func TestLinkClaimAgainstAnotherSweeper(t *testing.T) {
	host := testHost(t)
	dir := tempDir(t)
	lock := mkFile(t, dir, "a.lock", fileRec(testutil.Gone(t)))
	res := judge(t, dir, lock, verdict.Gone)
	a := fix.WithoutRenameNoReplace(fix.New(judges.Sweep(host)))
	b := fix.WithoutRenameNoReplace(fix.New(judges.Sweep(host)))
	a.Pid, b.Pid = 1000001, 1000002 // two sweepers, two claim names
	bReady, bGo, bDone := make(chan struct{}), make(chan struct{}), make(chan fix.Outcome, 1)
	b.Hook = func(s fix.Step, _ *scan.Lock) {
		if s == fix.BeforeUnlink {
			close(bReady)
			<-bGo
		}
	}
	a.Hook = at(t, fix.BeforeClaim, func(*scan.Lock) {
		go func() { bDone <- b.Fix(res) }()
		select {
		case <-bReady:
		case o := <-bDone:
			t.Errorf("sweeper B ended before its unlink: %s (%s)", o.Action, o.Reason)
			bDone <- o
		}
	})
	gotA := a.Fix(res)
	// An acquirer takes the lock if its name is free.
	live := []byte("live acquirer\n")
	took := false
	if fd, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
		took = true
		fd.Write(live)
		fd.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		t.Fatal(err)
	}
	close(bGo)
	gotB := <-bDone
	if gotA.Action == fix.Removed {
		t.Errorf("sweeper A removed a lock another sweeper had linked a claim of: %s", gotA.Reason)
	}
	if took {
		wantFile(t, lock, live, 0)
		return
	}
	wantOutcome(t, lock, gotB, fix.Removed, "judged it again and removed")
	if exists(lock) {
		t.Errorf("%s is still there", lock)
	}
	noDebris(t, dir)
}

// TestLinkClaimOfAReplacedLock: the lock changed hands between its last
// read and the link (its gone record unlinked, a live one made in its
// place): the claim links the new inode, which the check refuses; the live
// lock keeps its name and bytes throughout, and no claim is left.
func TestLinkClaimOfAReplacedLock(t *testing.T) {
	host := testHost(t)
	dir := tempDir(t)
	lock := mkFile(t, dir, "a.lock", fileRec(testutil.Gone(t)))
	res := judge(t, dir, lock, verdict.Gone)
	f := fix.WithoutRenameNoReplace(fix.New(judges.Sweep(host)))
	live := fileRec(os.Getpid())
	var ino uint64
	f.Hook = func(s fix.Step, _ *scan.Lock) {
		switch s {
		case fix.BeforeClaim:
			if err := os.Remove(lock); err != nil {
				t.Fatal(err)
			}
			testutil.WriteFile(t, lock, live)
			ino = inode(t, lock)
		case fix.BeforeUnlink, fix.BeforeVerify:
			t.Errorf("step %s reached with another lock linked", s)
		}
	}
	got := f.Fix(res)
	if got.Action == fix.Removed {
		t.Errorf("Fix removed a lock that changed hands: %s", got.Reason)
	}
	wantFile(t, lock, live, ino)
	noDebris(t, dir)
}

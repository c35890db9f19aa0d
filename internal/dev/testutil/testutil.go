//go:build linux

// Package testutil holds the fixtures that the tests of several lockctl
// packages share: holder processes that are live, gone, a zombie or holding
// a file lock; holder records written byte for byte; snapshots of a
// directory tree; and polling with a deadline.
//
// Holders are real processes, because what lockctl judges is the kernel's
// answer about a pid, and the helpers read /proc to make sure each one is
// what it claims to be before a test relies on it: a fixture that is not
// what it claims to be tests nothing. Hence the linux build tag on every
// file, and on every test file that imports this package.
//
// This package imports nothing of lockctl's, so that the internal tests of
// any package (package lock, package verdict) can use it without an import
// cycle. It reads /proc/<pid>/stat itself rather than through
// kernel.ParseStat for the same reason, and so that a fixture does not
// depend on the code it is used to test.
package testutil

import "time"

// T is what the helpers that only set up need of a test: *testing.T and
// *testing.B satisfy it, and so does a testscript command's
// *testscript.TestScript through a small adapter whose Cleanup is ts.Defer.
// These helpers fail the test with Fatalf, so call them from the goroutine
// that runs the test. The helpers that check (SameTree, Untouched) report
// with Errorf and take a testing.TB.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// WaitFor polls cond every 2ms until it holds, and fails the test if it
// still does not after timeout. Tests wait with it rather than sleep: a
// sleep long enough for a loaded machine is a slow test everywhere else.
func WaitFor(t T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

//go:build !linux

package lock

// watch is Linux's inotify wake-up (watch_linux.go); elsewhere a waiter
// polls only.
type watch struct{}

func releaseWatch(string) *watch { return nil }

func (w *watch) fired() <-chan struct{} { return nil }

func (w *watch) Close() {}

//go:build !linux

package kernel

// MarkWait: no memfd here, so no mark.
func MarkWait(path string) (unmark func()) { return func() {} }

//go:build !linux && !darwin && !freebsd && !windows

package main

// isTerminalFd says no where lockctl cannot tell: no progress line.
func isTerminalFd(fd uintptr) bool { return false }

//go:build linux && !amd64

package why

// archSyscallNames: none beyond the common ones here.
var archSyscallNames = map[int]string{}

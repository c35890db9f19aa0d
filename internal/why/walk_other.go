//go:build !linux

package why

import "errors"

// Explain needs Linux's /proc: a task's system call and its descriptors.
func Explain(pids []int) (*Report, error) {
	return nil, errors.New("lockctl why reads /proc/<pid>/syscall and /proc/locks, which only Linux has")
}

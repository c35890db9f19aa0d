//go:build linux || darwin

package kernel

import "golang.org/x/sys/unix"

// retry calls f again for as long as a signal interrupts it.
func retry(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

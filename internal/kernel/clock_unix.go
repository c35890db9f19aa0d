//go:build unix

package kernel

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Monotonic reads CLOCK_MONOTONIC, as this process's time namespace shows
// it: the clock a reservation's deadline is on.
func Monotonic() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("cannot read CLOCK_MONOTONIC: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

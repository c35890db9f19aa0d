//go:build !unix

package lock

import (
	"errors"
	"os"
)

var errBusy = errors.New("held by another process")

var errNoKernelLocks = errors.New("kernel locks (flock) are not supported on this platform")

func tryFlock(f *os.File) error { return errNoKernelLocks }

func tryRecordLock(f *os.File) error { return errNoKernelLocks }

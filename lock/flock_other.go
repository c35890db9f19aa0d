//go:build !unix

package lock

import (
	"errors"
	"os"

	"github.com/lockctl/lockctl/internal/fsx"
)

var errBusy = errors.New("held by another process")

var errNoKernelLocks = errors.New("kernel locks (flock) are not supported on this platform")

func tryFlock(f *os.File) error { return errNoKernelLocks }

func tryRecordLock(f *os.File) error { return errNoKernelLocks }

// releaseWatch has no kernel lock to wait on here: the caller polls.
func releaseWatch(fsx.Dir, string) <-chan struct{} { return nil }

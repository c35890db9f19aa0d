//go:build !unix

package verdict

import (
	"errors"
	"time"
)

// lchtimes is not supported here: fixtures with an aged link fail.
func lchtimes(string, time.Time) error { return errors.ErrUnsupported }

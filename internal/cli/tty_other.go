//go:build !unix

package cli

// inForeground: no terminal process groups to ask here.
func inForeground() bool { return false }

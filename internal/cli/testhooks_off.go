//go:build !lockctl_testhooks

package cli

// testHooks is false in every build but the crash tests' own
// (-tags lockctl_testhooks): see pauseEnv.
const testHooks = false

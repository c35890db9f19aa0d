//go:build lockctl_testhooks

package cli

// testHooks: this binary was built for the crash tests, and honours
// LOCKCTL_TEST_PAUSE (pauseEnv).
const testHooks = true

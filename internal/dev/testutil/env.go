//go:build linux

package testutil

import "strings"

// SetEnv is env with name's entry replaced by name=value, or with it added
// at the end: never a second entry. append(os.Environ(), "HOME=...") leaves
// two where HOME was set, and programs differ on which one counts (getenv
// in glibc takes the first), so an override that appends may not take.
func SetEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

//go:build !linux && !darwin

package kernel

import "github.com/lockctl/lockctl/verdict"

// probe has no kernel to ask on this platform: it is verdict.NoProbe, and
// fails closed (every pid is verdict.StateUnknown, verdict.ErrNoProbe).
func probe(pid int) verdict.Proc { return verdict.NoProbe{}.Probe(pid) }

// LocalHost reads what it can of this machine: verdict.BareHost.
func LocalHost() verdict.Host { return verdict.BareHost() }

package cli

import (
	"slices"
	"strings"
	"testing"
)

// FuzzArgs: the rewriting of the command line before urfave/cli reads it
// (a bare --timeout number gets its "s", and the flags of doctor, acquire
// and release move before their paths, and run's between LOCK and a "--"
// that follows nothing but run's flags) never panics, never adds or drops
// an argument, and never touches anything after "--": that is CMD's.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		"doctor reg --json", "doctor --timeout 5 reg", "acquire x.lock --timeout 5", "run x.lock -- sleep --timeout 5", "run x.lock --timeout 1s -- cmd", "run x.lock grep -v -- x",
		"run --timeout=2 x.lock -- cmd --json", "release --holder-pid 4 x.lock", "doctor -- --json", "acquire", "doctor --name",
	} {
		f.Add(s)
	}
	app := newApp(nil, nil)
	f.Fuzz(func(t *testing.T, line string) {
		args := append([]string{"lockctl"}, strings.Split(line, " ")...)
		out := flagsFirst(app, bareSeconds(args))
		if len(out) != len(args) {
			t.Fatalf("%q became %q: arguments added or dropped", args, out)
		}
		strip := func(s []string) []string {
			r := make([]string, len(s))
			for i, a := range s {
				r[i] = strings.TrimSuffix(a, "s")
			}
			slices.Sort(r)
			return r
		}
		if !slices.Equal(strip(args), strip(out)) {
			t.Fatalf("%q became %q: not the same arguments", args, out)
		}
		if i := slices.Index(args, "--"); i >= 0 && !slices.Equal(args[i:], out[len(out)-(len(args)-i):]) {
			t.Fatalf("%q became %q: what follows -- changed", args, out)
		}
	})
}

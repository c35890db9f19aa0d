//go:build linux

package main

import (
	"flag"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/testutil/scriptcmd"
)

var update = flag.Bool("u", false, "rewrite the golden files inside testdata/script/*.txtar from the actual output")

// TestMain makes the test binary double as the commands the scripts run:
// "lockctl" is the real CLI; "expect-exit" runs a command and checks its
// exact exit status, which testscript's "!" cannot (it only says "failed",
// and a Go panic also exits 2). The Go end-to-end tests are in
// internal/e2e; the scripts' own commands in internal/testutil/scriptcmd.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"lockctl":     func() { os.Exit(cli.Run(os.Args, os.Stdout, os.Stderr)) },
		"expect-exit": scriptcmd.ExpectExit,
	})
}

// TestScript runs every testdata/script/*.txtar end to end.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                "testdata/script",
		UpdateScripts:      *update,
		RequireUniqueNames: true,
		Setup:              scriptcmd.Setup,
		Condition:          scriptcmd.Condition,
		Cmds:               scriptcmd.Cmds(),
	})
}

// Command sample shows lockctl doctor at work on a registry that holds
// every verdict a committed file cannot: it copies testdata/registry (the
// owner-less, unknown and foreign cases, which need no process) into a new
// directory, adds a lock whose holder it starts and then SIGKILLs (gone)
// and one it holds itself (live), runs lockctl doctor on it, and removes it
// all. A pid cannot be committed, so the live and the gone lock are made
// here, by the same lock code as lockctl acquire.
//
//	go run ./internal/dev/sample           # text, as on a terminal
//	go run ./internal/dev/sample --json    # any doctor flags
package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/judges"
	"github.com/lockctl/lockctl/lock"
)

// childEnv marks the process this command starts to hold the gone lock.
const childEnv = "LOCKCTL_SAMPLE_HOLDER"

func main() {
	holdIfChild()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// holdIfChild is the gone lock's holder: it waits to be killed.
func holdIfChild() {
	if os.Getenv(childEnv) == "1" {
		select {}
	}
}

func run(flags []string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "sample: %v\n", err)
		return cli.ExitError
	}
	dir, err := os.MkdirTemp("", "lockctl-sample-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	reg := filepath.Join(dir, "registry")
	if err := copyTree("testdata/registry", reg); err != nil {
		if !os.IsNotExist(err) {
			return fail(err)
		}
		if err := os.Mkdir(reg, 0o755); err != nil { // run from elsewhere: only the two below
			return fail(err)
		}
	}
	locks := filepath.Join(reg, "app")
	if err := os.Mkdir(locks, 0o755); err != nil {
		return fail(err)
	}
	// Gone: a holder that took the lock and was SIGKILLed, leaving it.
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	child := exec.Command(self)
	child.Env = append(os.Environ(), childEnv+"=1")
	if err := child.Start(); err != nil {
		return fail(err)
	}
	gone, err := lock.Acquire(context.Background(), filepath.Join(locks, "deploy.lock"), lock.Options{Kernel: judges.Kernel{}, Pid: child.Process.Pid, Command: "deploy.sh"})
	if err != nil {
		_ = child.Process.Kill()
		_ = child.Wait()
		return fail(err)
	}
	if f := gone.File(); f != nil {
		f.Close() // the kernel lock this process took for it: a killed holder's would be gone too
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	// Live: this process holds it while doctor runs.
	live, err := lock.Acquire(context.Background(), filepath.Join(locks, "backup.lock"), lock.Options{Kernel: judges.Kernel{}, Command: "backup.sh"})
	if err != nil {
		return fail(err)
	}
	defer live.Release()
	fmt.Fprintf(stderr, "sample: lockctl doctor %s\n\n", reg)
	code := cli.Run(append(append([]string{"lockctl", "doctor"}, flags...), reg), stdout, stderr)
	fmt.Fprintf(stderr, "sample: %s is removed now (its pids mean nothing once this ends); doctor's flags pass through: go run ./internal/dev/sample --fix\n", reg)
	if code == cli.ExitAttention {
		code = 0 // the sample is meant to need attention
	}
	return code
}

// copyTree copies the directory src to dst: directories and regular files,
// their modes kept.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(to, info.Mode().Perm())
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, info.Mode().Perm())
		}
		return nil
	})
}

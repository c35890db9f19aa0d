package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) {
	holdIfChild() // the gone lock's holder is this binary, started again
	os.Exit(m.Run())
}

// TestSample: the sample registry holds a gone and a live lock besides the
// committed cases, and --fix passed through removes the gone one only.
func TestSample(t *testing.T) {
	wd, _ := os.Getwd()
	if err := os.Chdir(filepath.Join("..", "..", "..")); err != nil { // where the README runs it
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--json", "--fix"}, &stdout, &stderr); code != 0 {
		t.Fatalf("sample: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	var doc struct {
		Locks []struct {
			Path, Verdict, Action string
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	got := map[string]string{}
	for _, l := range doc.Locks {
		got[filepath.Base(l.Path)] = l.Verdict + "/" + l.Action
	}
	for name, want := range map[string]string{"deploy.lock": "gone/removed", "backup.lock": "live/skipped", "sync.lock": "foreign/skipped"} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q (all: %v)", name, got[name], want, got)
		}
	}
}

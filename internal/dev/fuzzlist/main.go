// Command fuzzlist prints the fuzz targets of every registered lock format
// and data format (scan.Formats and scan.DataFormats: each one's Fuzz),
// one "pkg:FuzzName" a line, each once, in registry order. .ci/run fuzzes these and the few targets that
// belong to no format, so that a new format's target is fuzzed by being
// registered (issue 43).
package main

import (
	"fmt"

	"github.com/lockctl/lockctl/scan"
)

func main() {
	var targets []string
	for _, f := range scan.Formats() {
		targets = append(targets, f.Fuzz...)
	}
	for _, f := range scan.DataFormats() {
		targets = append(targets, f.Fuzz...)
	}
	seen := map[string]bool{}
	for _, t := range targets {
		if !seen[t] {
			seen[t] = true
			fmt.Println(t)
		}
	}
}

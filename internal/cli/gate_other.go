//go:build !unix

package cli

import (
	"os"
)

// gate is lockctl run's end of the channel to CMD's waiting process: a pipe
// here, where no open file can be handed over.
type gate struct{ f *os.File }

func newGate() (g gate, child *os.File, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return gate{}, nil, err
	}
	return gate{w}, r, nil
}

func (g gate) open(lockFile *os.File) error {
	_, err := g.f.Write([]byte{'g'})
	return err
}

func (g gate) close() { g.f.Close() }

func waitGate() (ok bool) {
	f := os.NewFile(3, "gate")
	defer f.Close()
	var b [1]byte
	n, _ := f.Read(b[:])
	return n == 1 && b[0] == 'g'
}

package fsx

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteError says which step of WriteFileAtomic failed, on which path.
type WriteError struct {
	// Op is "create a temporary file in" (Path is the directory), "write",
	// "sync" or "rename" (From is the temporary file, Path the target).
	Op   string
	Path string
	From string
	Err  error
}

func (e *WriteError) Error() string {
	if e.Op == "rename" {
		return fmt.Sprintf("cannot rename %s to %s: %v", e.From, e.Path, e.Err)
	}
	return fmt.Sprintf("cannot %s %s: %v", e.Op, e.Path, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// WriteFileAtomic writes what render produces to path so that a reader of
// path sees the whole previous file or the whole new one, never a part, and
// never an empty file. Every error is a *WriteError.
//
// render writes to a new temporary file in path's directory, created with
// O_EXCL (so it is never someone else's file) and named ".<base>.tmp-<hex>",
// which matches no "*.prom" glob: node_exporter's textfile collector never
// reads it. The file is flushed, fsynced and closed, then renamed over path;
// the directory is then fsynced, as far as the file system allows. On any
// error before the rename, the temporary file is removed and path is left
// as it was.
//
// The new file gets mode 0666 less the umask, as a shell redirection would;
// path's old mode and owner are not kept. What stands at path must be a
// regular file, or nothing: a device, FIFO, socket, directory or symbolic
// link there is refused (ErrNotRegular) and left alone, since renaming over
// it would replace /dev/null or /dev/stdout for everyone. Two writers of
// the same path at once each publish a complete file; the later rename
// wins. A process killed (SIGKILL)
// between creating the temporary file and the rename leaves it behind;
// nothing else does.
func WriteFileAtomic(path string, render func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return &WriteError{Op: "replace", Path: path, Err: ErrNotRegular}
	}
	f, tmp, err := createExclusive(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return &WriteError{Op: "create a temporary file in", Path: dir, Err: bare(err)}
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	// Errors name path, the file being written: the temporary file is gone
	// by the time anyone reads the message.
	failed := func(op string, err error) error { return &WriteError{Op: op, Path: path, Err: bare(err)} }
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := render(bw); err != nil {
		return failed("write", err)
	}
	if err := bw.Flush(); err != nil {
		return failed("write", err)
	}
	// The order is the argument: the bytes are on disk before the rename
	// publishes them, so a crash cannot leave path renamed but empty.
	if err := f.Sync(); err != nil {
		return failed("sync", err)
	}
	closed = true
	if err := f.Close(); err != nil {
		return failed("write", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return &WriteError{Op: "rename", From: tmp, Path: path, Err: bare(err)}
	}
	// Make the rename itself durable. Some file systems cannot sync a
	// directory; the file is in place either way, so this is best effort.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// createExclusive creates a new file dir/prefix<random hex> with O_EXCL,
// retrying with another name if one exists.
func createExclusive(dir, prefix string) (*os.File, string, error) {
	var b [6]byte
	for try := 0; ; try++ {
		rand.Read(b[:])
		name := filepath.Join(dir, prefix+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, name, err
	}
}

// bare drops an *fs.PathError or *os.LinkError wrapper, whose paths a
// WriteError names already.
func bare(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe) && error(pe) == err:
		return pe.Err
	case errors.As(err, &le) && error(le) == err:
		return le.Err
	}
	return err
}

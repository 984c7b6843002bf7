// Package atomicio writes outputs so that a failure never leaves a half-written file or directory:
// everything goes to a temporary path beside the target and is renamed into place at the end.
package atomicio

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile writes data to path through a temporary file in the same directory.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteWith(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteWith streams the content produced by write into path through a temporary file; if write
// fails, the temporary file is removed and path is left untouched.
func WriteWith(path string, perm os.FileMode, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := write(f); err != nil {
		return fail(err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Dir is an output directory under construction: files are written under Tmp, and Commit renames
// Tmp to the final path. Abort (safe to defer) removes Tmp if Commit was not reached.
type Dir struct {
	Final string
	Tmp   string
	done  bool
}

// NewDir creates a temporary sibling of final. It refuses to run when final exists and is not an
// empty directory unless overwrite is set, so that a previous result is never silently mixed in.
func NewDir(final string, overwrite bool) (*Dir, error) {
	if entries, err := os.ReadDir(final); err == nil && len(entries) > 0 && !overwrite {
		return nil, fmt.Errorf("output directory %s already exists and is not empty (use --overwrite)", final)
	}
	parent := filepath.Dir(filepath.Clean(final))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(final)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temporary directory for %s: %w", final, err)
	}
	return &Dir{Final: final, Tmp: tmp}, nil
}

// Path returns the path of name inside the temporary directory.
func (d *Dir) Path(name ...string) string {
	return filepath.Join(append([]string{d.Tmp}, name...)...)
}

// Commit replaces Final with the finished temporary directory.
func (d *Dir) Commit() error {
	if err := os.RemoveAll(d.Final); err != nil {
		return fmt.Errorf("replace %s: %w", d.Final, err)
	}
	if err := os.Rename(d.Tmp, d.Final); err != nil {
		return fmt.Errorf("rename %s to %s: %w", d.Tmp, d.Final, err)
	}
	d.done = true
	return nil
}

// Abort removes the temporary directory unless Commit succeeded.
func (d *Dir) Abort() {
	if !d.done {
		os.RemoveAll(d.Tmp)
	}
}

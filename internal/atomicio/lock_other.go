//go:build !unix

package atomicio

import (
	"errors"
	"fmt"
	"os"
)

// Lock is an exclusive lock on a hidden file beside an output path; it is held for as long as a
// run may create, check or replace that output.
type Lock struct {
	path string
	f    *os.File
}

// Acquire takes the lock of target (the file LockPath(target)) without waiting: when the lock file
// exists it fails with an error wrapping ErrLocked. Without flock, a killed run leaves the file
// behind and the error says to remove it.
func Acquire(target string) (*Lock, error) {
	path, err := lockFileFor(target)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%w: another tracksum run holds %s (remove it if no run is active)", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", target, err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return &Lock{path: path, f: f}, nil
}

// Release removes the lock file. It is safe to call more than once and on nil.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	l.f.Close()
	os.Remove(l.path)
	l.f = nil
}

//go:build unix

package atomicio

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Lock is an exclusive advisory lock (flock) on a hidden file beside an output path; it is held
// for as long as a run may create, check or replace that output.
type Lock struct {
	path string
	f    *os.File
}

// Acquire takes the lock of target (the file LockPath(target)) without waiting: when another
// process holds it, it fails with an error wrapping ErrLocked. The lock dies with the process, so a
// killed run never leaves a stale lock behind.
func Acquire(target string) (*Lock, error) {
	path, err := lockFileFor(target)
	if err != nil {
		return nil, err
	}
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", target, err)
		}
		if err := flock(f); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w: another tracksum run holds %s", ErrLocked, path)
			}
			return nil, fmt.Errorf("lock %s: %w", target, err)
		}
		// Release removes the file before unlocking it: if the holder we waited for did so after
		// our open, we locked an orphan inode that nobody else will see; open the new file then.
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			// The pid is for people looking at the file; the lock itself is the flock.
			f.Truncate(0)
			fmt.Fprintf(f, "%d\n", os.Getpid())
			return &Lock{path: path, f: f}, nil
		}
		f.Close()
	}
}

func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// Release removes the lock file and unlocks it. It is safe to call more than once and on nil.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path)
	l.f.Close()
	l.f = nil
}

// Package atomicio writes outputs so that a failure never leaves a half-written file or directory:
// everything goes to a temporary path beside the target and is renamed into place at the end.
//
// It is also the one reader of JSON files (ReadJSON, ReadJSONWith; ReadFileMax and DecodeJSON for
// callers that need the bytes) and of JSON Lines files (ReadJSONL; Lines and ReadLines for callers
// with their own per-line decoding): reads are bounded (MaxJSONBytes, MaxJSONLLine), and errors
// name the file and the line, and the column of a syntax error.
package atomicio

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// WriteJSON writes v as indented JSON (two spaces, a final newline) to path through WriteFile: the
// one format of every JSON file tracksum writes (checkpoint metadata, reports, manifests), so that
// they read alike and the same value always gives the same bytes.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return WriteFile(path, append(b, '\n'), 0o644)
}

// WriteJSONL writes recs to path as JSON Lines (see EncodeJSONL), atomically.
func WriteJSONL[T any](path string, recs []T) error {
	return WriteWith(path, 0o644, func(w io.Writer) error { return EncodeJSONL(w, recs) })
}

// EncodeJSONL writes recs to w as JSON Lines: one object per line, with <, > and & left as they are
// (the files are read by people and tools, not embedded in HTML).
func EncodeJSONL[T any](w io.Writer, recs []T) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// ErrLocked reports an output that another run is creating or replacing.
var ErrLocked = errors.New("output locked")

// ErrNotDir reports an output path that exists and is not a directory (or a symlink to one): it is
// refused rather than replaced, since it is most likely a file the user wants to keep.
var ErrNotDir = errors.New("not a directory")

// LockPath returns the lock file of an output path: a hidden sibling, .NAME.lock.
func LockPath(target string) string {
	return sibling(target, ".lock")
}

// sibling returns the hidden path .NAME<suffix> beside path.
func sibling(path, suffix string) string {
	path = filepath.Clean(path)
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+suffix)
}

func lockFileFor(target string) (string, error) {
	path := LockPath(target)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("lock %s: %w", target, err)
	}
	return path, nil
}

// ResolveDir checks an output directory path before anything is written there. It returns the
// path to use: path itself, or the directory a symlink points to (so that the output goes where
// the link leads instead of replacing the link). A path that exists and is not a directory, or a
// dangling symlink, is refused with an error wrapping ErrNotDir.
func ResolveDir(path string) (string, error) {
	path = filepath.Clean(path)
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return path, nil
	}
	if err != nil {
		return "", err
	}
	if st.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", fmt.Errorf("output %s is a symlink that does not lead to a directory: %w", path, ErrNotDir)
		}
		if st, err = os.Stat(target); err != nil {
			return "", err
		}
		if !st.IsDir() {
			return "", fmt.Errorf("output %s is a symlink to %s, which is %w; refusing to replace it", path, target, ErrNotDir)
		}
		return target, nil
	}
	if !st.IsDir() {
		return "", fmt.Errorf("output %s exists and is %w (a %s); refusing to replace it", path, ErrNotDir, kind(st.Mode()))
	}
	return path, nil
}

func kind(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// RemoveStaleTemps removes the temporary files and directories that WriteWith and NewDir create
// in dir (.NAME.tmp-*) and that a killed process left behind. Call it only while holding the lock
// of the output dir belongs to: a live writer's temporaries would go too.
func RemoveStaleTemps(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// Dir is an output directory under construction: files are written under Tmp, and Commit puts Tmp
// at Final. From NewDir to Commit or Abort, the lock of Final is held, so that two runs never both
// check, build or replace the same output.
//
// Replacing keeps a complete version on disk at every instant. On Linux, Tmp and Final are
// exchanged in one atomic rename (renameat2 RENAME_EXCHANGE) and the old version is deleted
// afterwards. Where that is not available, it takes three renames: the old Final is renamed aside
// (.NAME.old), Tmp is renamed to Final, then the aside copy is deleted; a crash between the first
// two leaves only the aside copy, which the next NewDir or RecoverDir on the same path puts back
// before doing anything else.
type Dir struct {
	Final string
	Tmp   string
	lock  *Lock
	done  bool
}

// DirOptions tune NewDirWith.
type DirOptions struct {
	// Overwrite allows replacing an existing non-empty directory: with Previous set, only a
	// previous output of the same command.
	Overwrite bool
	// Previous recognises a previous output of the same command in an existing non-empty
	// directory (typically by its manifest, see OnlyFiles): nil for one, else an error saying
	// what in it the command did not write ("holds notes.txt, not written by tracksum-eval").
	// A directory it does not recognise is refused even with Overwrite, so that --overwrite
	// never deletes a user's files (issue 22 defects 6 and 7). Every command's output directory
	// sets it; only a command's own internal directories (training's state/) leave it nil.
	Previous func(dir string) error
	// Refresh replaces a recognised previous output without Overwrite: for a command's own
	// internal outputs only (peft.Write's adapter directory), never a command's --out, whose
	// replacement always takes --overwrite.
	Refresh bool
}

// ErrForeign reports an existing output directory that holds files its command did not write:
// it is never replaced, with or without --overwrite.
var ErrForeign = errors.New("not a previous output of this command")

// OnlyFiles returns nil when dir holds nothing but the files named (paths relative to dir, with
// slashes) and the directories leading to them, else an error naming the first other entry as
// "holds NAME, not written by WHO". It is the usual DirOptions.Previous: files comes from the
// manifest of the previous output.
func OnlyFiles(dir, who string, files []string) error {
	own := map[string]bool{}
	for _, f := range files {
		f = filepath.ToSlash(filepath.Clean(f))
		own[f] = true
		for d := filepath.ToSlash(filepath.Dir(f)); d != "." && d != "/" && !own[d+"/"]; d = filepath.ToSlash(filepath.Dir(d)) {
			own[d+"/"] = true
		}
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && own[rel+"/"]:
			return nil
		case d.IsDir():
			return fmt.Errorf("holds %s/, not written by %s", rel, who)
		case !d.Type().IsRegular() || !own[rel]:
			return fmt.Errorf("holds %s, not written by %s", rel, who)
		}
		return nil
	})
}

// NewDir is NewDirWith(final, DirOptions{Overwrite: overwrite}).
func NewDir(final string, overwrite bool) (*Dir, error) {
	return NewDirWith(final, DirOptions{Overwrite: overwrite})
}

// NewDirWith locks final, recovers what a crashed replacement of final left behind, removes its
// stale temporary directories, and creates a fresh temporary sibling. It refuses to run when final
// exists and is not a directory (ErrNotDir), when another run holds its lock (ErrLocked), or when
// it is a non-empty directory that the options do not allow replacing, so that a previous result
// is never silently mixed in or deleted.
func NewDirWith(final string, o DirOptions) (_ *Dir, err error) {
	final, err = ResolveDir(final)
	if err != nil {
		return nil, err
	}
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", parent, err)
	}
	lock, err := Acquire(final)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Release()
		}
	}()
	if err := recoverAside(final); err != nil {
		return nil, err
	}
	if err := removeStaleDirs(final); err != nil {
		return nil, fmt.Errorf("remove stale temporary directories of %s: %w", final, err)
	}
	// Check again under the lock: another run may have put something there since ResolveDir.
	if _, err := ResolveDir(final); err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(final); err == nil && len(entries) > 0 {
		if o.Previous != nil {
			if why := o.Previous(final); why != nil {
				return nil, fmt.Errorf("output directory %s %v: refusing to replace it (%w; --overwrite replaces only that); remove it yourself or choose another --out",
					final, why, ErrForeign)
			}
		}
		if !o.Overwrite && !(o.Refresh && o.Previous != nil) {
			return nil, fmt.Errorf("output directory %s already exists and is not empty (use --overwrite)", final)
		}
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("output %s: %w", final, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(final)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temporary directory for %s: %w", final, err)
	}
	return &Dir{Final: final, Tmp: tmp, lock: lock}, nil
}

// RecoverDir repairs what a crash during a Commit to final left behind (see Dir) and removes its
// stale temporary directories, under final's lock, so that final can be read. It fails with
// ErrLocked when another run holds final.
func RecoverDir(final string) error {
	lock, err := Acquire(final)
	if err != nil {
		return err
	}
	defer lock.Release()
	if err := recoverAside(final); err != nil {
		return err
	}
	return removeStaleDirs(final)
}

// recoverAside finishes or undoes a replacement of final that a crash interrupted: with final
// gone, the aside copy is the last complete version and goes back; with final present, the aside
// copy is an old version whose deletion was cut short.
func recoverAside(final string) error {
	aside := sibling(final, ".old")
	if _, err := os.Lstat(aside); err != nil {
		return nil
	}
	if _, err := os.Lstat(final); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(aside, final); err != nil {
			return fmt.Errorf("restore %s from %s: %w", final, aside, err)
		}
		return nil
	}
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("remove %s: %w", aside, err)
	}
	return nil
}

// removeStaleDirs removes the .NAME.tmp-* siblings of final: under final's lock, no live process
// is building one.
func removeStaleDirs(final string) error {
	matches, err := filepath.Glob(filepath.Join(filepath.Dir(final), "."+globEscape(filepath.Base(final))+".tmp-*"))
	if err != nil {
		return err
	}
	for _, m := range matches {
		if err := os.RemoveAll(m); err != nil {
			return err
		}
	}
	return nil
}

func globEscape(s string) string {
	var sb strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// Path returns the path of name inside the temporary directory.
func (d *Dir) Path(name ...string) string {
	return filepath.Join(append([]string{d.Tmp}, name...)...)
}

// Commit puts the finished temporary directory at Final (replacing an existing Final through an
// aside copy, see Dir) and releases the lock. The directory gets mode 0755: MkdirTemp creates it
// private, and the result is an ordinary output directory.
func (d *Dir) Commit() error {
	if d.done {
		return fmt.Errorf("commit %s: already committed", d.Final)
	}
	if err := os.Chmod(d.Tmp, 0o755); err != nil {
		return fmt.Errorf("commit %s: %w", d.Final, err)
	}
	if err := commitCrash(d, "before"); err != nil {
		return err
	}
	if _, err := os.Lstat(d.Final); err == nil && !noExchange {
		// Swap the two in one step: Final is complete at every instant, and a crash before the
		// old version (now at Tmp) is deleted leaves it as a stale temporary of the next run.
		if err := exchange(d.Tmp, d.Final); err == nil {
			d.done = true
			syncDir(filepath.Dir(d.Final))
			if err := commitCrash(d, "renamed"); err != nil {
				return err
			}
			err := os.RemoveAll(d.Tmp)
			d.lock.Release()
			if err != nil {
				return fmt.Errorf("%s is complete, but removing the previous version %s failed: %w", d.Final, d.Tmp, err)
			}
			return nil
		}
	}
	aside := sibling(d.Final, ".old")
	if _, err := os.Lstat(d.Final); err == nil {
		// A leftover aside copy is older than Final (recoverAside ran under this lock).
		if err := os.RemoveAll(aside); err != nil {
			return fmt.Errorf("replace %s: %w", d.Final, err)
		}
		if err := os.Rename(d.Final, aside); err != nil {
			return fmt.Errorf("replace %s: %w", d.Final, err)
		}
		if err := commitCrash(d, "aside"); err != nil {
			return err
		}
		if err := os.Rename(d.Tmp, d.Final); err != nil {
			if rerr := os.Rename(aside, d.Final); rerr != nil {
				return fmt.Errorf("rename %s to %s: %w (the previous version is in %s)", d.Tmp, d.Final, err, aside)
			}
			return fmt.Errorf("rename %s to %s: %w", d.Tmp, d.Final, err)
		}
		d.done = true
		syncDir(filepath.Dir(d.Final))
		if err := commitCrash(d, "renamed"); err != nil {
			return err
		}
		if err := os.RemoveAll(aside); err != nil {
			d.lock.Release()
			return fmt.Errorf("%s is complete, but removing the previous version %s failed: %w", d.Final, aside, err)
		}
	} else {
		if err := os.Rename(d.Tmp, d.Final); err != nil {
			return fmt.Errorf("rename %s to %s: %w", d.Tmp, d.Final, err)
		}
		d.done = true
		syncDir(filepath.Dir(d.Final))
	}
	d.lock.Release()
	return nil
}

// commitCrash lets tests stop Commit at a given point as a crash would (see crashAt).
func commitCrash(d *Dir, point string) error {
	if crashAt != nil && crashAt(point) {
		return fmt.Errorf("commit %s: simulated crash %s", d.Final, point)
	}
	return nil
}

// crashAt and noExchange (which makes Commit use the aside copy even where an atomic exchange is
// available) are set by tests only.
var (
	crashAt    func(point string) bool
	noExchange bool
)

// syncDir flushes a directory's entries, so that a rename survives a power cut; errors are
// ignored because some file systems cannot sync directories and the rename itself succeeded.
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}

// Abort removes the temporary directory unless Commit succeeded, and releases the lock.
// It is safe to defer.
func (d *Dir) Abort() {
	if !d.done {
		os.RemoveAll(d.Tmp)
	}
	d.lock.Release()
}

// LockFile takes the lock of a single-file output (see Acquire) and removes the .NAME.tmp-* files
// that a killed writer of path left behind: with the lock held, no live process is writing one.
// Hold it from the first check of path until the file is renamed into place, so that two runs on
// one output fail clearly instead of the last writer silently winning.
func LockFile(path string) (*Lock, error) {
	l, err := Acquire(path)
	if err != nil {
		return nil, err
	}
	if err := removeStaleDirs(path); err != nil {
		l.Release()
		return nil, fmt.Errorf("remove leftovers of %s: %w", path, err)
	}
	return l, nil
}

// ReadFile is os.ReadFile for inputs: it refuses anything but a regular file (a FIFO, a device, a
// socket) before opening it, since opening a FIFO blocks until a writer appears and a device may
// never end. The error names path and what it is.
func ReadFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, kind(fi.Mode()))
	}
	return os.ReadFile(path)
}

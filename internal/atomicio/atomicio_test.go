package atomicio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWriteWithFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteWith(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want wrapping %v", err, boom)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "old" {
		t.Errorf("target changed to %q after a failed write", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestWriteFileReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.txt")
	for _, content := range []string{"first", "second"} {
		if err := WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", st.Mode().Perm())
	}
}

// TestWriteJSON pins the one JSON layout (two-space indent, final newline) and checks that a value
// that cannot be encoded leaves an existing file untouched.
func TestWriteJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.json")
	if err := WriteJSON(path, map[string]any{"b": []int{1}, "a": "x<y"}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": \"x\\u003cy\",\n  \"b\": [\n    1\n  ]\n}\n"
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := WriteJSON(path, map[string]any{"f": func() {}}); err == nil {
		t.Fatal("unencodable value: no error")
	}
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Errorf("after a failed write: %q, want the previous content", got)
	}
}

func TestDir(t *testing.T) {
	tests := []struct {
		desc      string
		existing  bool
		overwrite bool
		commit    bool
		wantErr   bool
		wantFinal string // content of final/file, "" when final must not exist
	}{
		{desc: "new directory committed", commit: true, wantFinal: "new"},
		{desc: "aborted leaves nothing", commit: false},
		{desc: "existing refused without overwrite", existing: true, wantErr: true, wantFinal: "old"},
		{desc: "existing replaced with overwrite", existing: true, overwrite: true, commit: true, wantFinal: "new"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			parent := t.TempDir()
			final := filepath.Join(parent, "out")
			if tc.existing {
				os.MkdirAll(final, 0o755)
				os.WriteFile(filepath.Join(final, "file"), []byte("old"), 0o644)
			}
			d, err := NewDir(final, tc.overwrite)
			if tc.wantErr {
				if err == nil {
					t.Fatal("NewDir succeeded, want error")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(d.Path("file"), []byte("new"), 0o644); err != nil {
					t.Fatal(err)
				}
				if tc.commit {
					if err := d.Commit(); err != nil {
						t.Fatal(err)
					}
				}
				d.Abort()
			}
			got, err := os.ReadFile(filepath.Join(final, "file"))
			if tc.wantFinal == "" {
				if err == nil {
					t.Errorf("final directory exists with %q", got)
				}
			} else if string(got) != tc.wantFinal {
				t.Errorf("final file = %q (%v), want %q", got, err, tc.wantFinal)
			}
			entries, _ := os.ReadDir(parent)
			for _, e := range entries {
				if e.Name() != "out" {
					t.Errorf("leftover %s", e.Name())
				}
			}
		})
	}
}

// Issue 10 item 1: --out naming a regular file (or a symlink to one) deleted it and put a
// directory there.
func TestNewDirRefusesFileOutput(t *testing.T) {
	parent := t.TempDir()
	file := filepath.Join(parent, "precious.txt")
	if err := os.WriteFile(file, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(parent, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(parent, "dangling")
	if err := os.Symlink(filepath.Join(parent, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc, path string
	}{
		{"regular file", file},
		{"symlink to a regular file", link},
		{"dangling symlink", dangling},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			for _, overwrite := range []bool{false, true} {
				d, err := NewDir(tc.path, overwrite)
				if !errors.Is(err, ErrNotDir) {
					if d != nil {
						d.Abort()
					}
					t.Fatalf("overwrite=%v: err = %v, want ErrNotDir", overwrite, err)
				}
			}
			if got, err := os.ReadFile(file); err != nil || string(got) != "precious" {
				t.Errorf("file now %q, %v", got, err)
			}
			if _, err := os.Lstat(tc.path); err != nil {
				t.Errorf("%s removed: %v", tc.path, err)
			}
			assertOnly(t, parent, "precious.txt", "link", "dangling")
		})
	}
}

// A symlink to a directory is followed: the output replaces the directory it points to and the
// link stays.
func TestNewDirFollowsSymlinkToDir(t *testing.T) {
	parent := t.TempDir()
	real := filepath.Join(parent, "real")
	os.MkdirAll(real, 0o755)
	os.WriteFile(filepath.Join(real, "file"), []byte("old"), 0o644)
	link := filepath.Join(parent, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	d, err := NewDir(link, true)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Abort()
	os.WriteFile(d.Path("file"), []byte("new"), 0o644)
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(link, "file")); string(got) != "new" {
		t.Errorf("through the link: %q, want new", got)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced: %v %v", st, err)
	}
}

// Issue 10 item 2: Commit removed the old directory before renaming the new one in, so a crash
// between the two lost both. At every crash point one complete version must be on disk, and the
// next NewDir must bring back the previous version when the new one is not in place yet.
func TestCommitCrashLeavesOneCompleteVersion(t *testing.T) {
	defer func() { noExchange = false }()
	for _, tc := range []struct {
		point    string
		exchange bool
		want     string // content visible at final after the crash and the next NewDir
	}{
		{"before", true, "old"},
		{"renamed", true, "new"},
		{"before", false, "old"},
		{"aside", false, "old"},
		{"renamed", false, "new"},
	} {
		t.Run(fmt.Sprintf("%s exchange=%v", tc.point, tc.exchange), func(t *testing.T) {
			noExchange = !tc.exchange
			parent := t.TempDir()
			final := filepath.Join(parent, "out")
			os.MkdirAll(final, 0o755)
			os.WriteFile(filepath.Join(final, "file"), []byte("old"), 0o644)
			d, err := NewDir(final, true)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(d.Path("file"), []byte("new"), 0o644)
			crashAt = func(p string) bool { return p == tc.point }
			defer func() { crashAt = nil }()
			if err := d.Commit(); err == nil {
				t.Fatal("Commit succeeded through a simulated crash")
			}
			crashAt = nil
			// A crash leaves the temporary directory and releases the lock (the process is gone).
			d.lock.Release()
			if tc.exchange {
				// The atomic exchange never leaves final missing or incomplete.
				if b, err := os.ReadFile(filepath.Join(final, "file")); err != nil || string(b) != tc.want {
					t.Fatalf("final/file = %q, %v right after the crash, want %q", b, err, tc.want)
				}
			}
			complete := 0
			for _, p := range []string{final, filepath.Join(parent, ".out.old")} {
				if b, err := os.ReadFile(filepath.Join(p, "file")); err == nil && (string(b) == "old" || string(b) == "new") {
					complete++
				}
			}
			if complete == 0 {
				t.Fatal("no complete version on disk after the crash")
			}
			d2, err := NewDir(final, false)
			if err == nil {
				d2.Abort()
				t.Fatal("NewDir without overwrite accepted the recovered non-empty directory")
			}
			d2, err = NewDir(final, true)
			if err != nil {
				t.Fatal(err)
			}
			d2.Abort()
			if got, err := os.ReadFile(filepath.Join(final, "file")); string(got) != tc.want {
				t.Errorf("after recovery final/file = %q (%v), want %q", got, err, tc.want)
			}
			assertOnly(t, parent, "out")
		})
	}
}

// Issue 10 item 4: two runs on one output both passed the existence check and the later deleted
// the earlier's result. The second must fail clearly while the first holds the output.
func TestNewDirLockedOutput(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "out")
	d1, err := NewDir(final, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewDir(final, true); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another tracksum run holds "+LockPath(final)) {
		t.Fatalf("second NewDir: %v, want ErrLocked naming %s", err, LockPath(final))
	}
	if _, err := Acquire(final); !errors.Is(err, ErrLocked) {
		t.Fatalf("Acquire while held: %v", err)
	}
	os.WriteFile(d1.Path("file"), []byte("first"), 0o644)
	if err := d1.Commit(); err != nil {
		t.Fatal(err)
	}
	d1.Abort()
	if _, err := NewDir(final, false); err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("after commit: %v, want the not-empty refusal", err)
	}
	l, err := Acquire(final)
	if err != nil {
		t.Fatalf("lock not released: %v", err)
	}
	l.Release()
	l.Release()
	assertOnly(t, parent, "out")
}

// Issue 10 item 13: the hidden temporary directories of a killed run were never removed.
func TestNewDirRemovesStaleTemps(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "out")
	for _, name := range []string{".out.tmp-123", ".out.tmp-456/sub"} {
		os.MkdirAll(filepath.Join(parent, name), 0o700)
	}
	os.WriteFile(filepath.Join(parent, ".other.tmp-1"), nil, 0o644) // another output's: kept
	d, err := NewDir(final, false)
	if err != nil {
		t.Fatal(err)
	}
	d.Abort()
	assertOnly(t, parent, ".other.tmp-1")

	inside := filepath.Join(parent, "ck")
	os.MkdirAll(filepath.Join(inside, ".state.tmp-9"), 0o700)
	os.WriteFile(filepath.Join(inside, ".metrics.json.tmp-1"), nil, 0o644)
	os.WriteFile(filepath.Join(inside, "hparams.json"), nil, 0o644)
	if err := RemoveStaleTemps(inside); err != nil {
		t.Fatal(err)
	}
	assertOnly(t, inside, "hparams.json")
}

// assertOnly fails unless dir holds exactly the names given.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

// TestPreviousRefusesForeign: with DirOptions.Previous, --overwrite replaces a recognised previous
// output only; a directory holding anything else (at any depth) is refused with ErrForeign and
// left as it was (issue 22 defects 6 and 7).
func TestPreviousRefusesForeign(t *testing.T) {
	own := []string{"manifest.json", "sub/a.parquet"}
	previous := func(dir string) error { return OnlyFiles(dir, "tracksum-test", own) }
	for _, tc := range []struct {
		desc  string
		files []string
		want  string // "" = replaced
	}{
		{"previous output", own, ""},
		{"part of a previous output", []string{"manifest.json"}, ""},
		{"a user's file beside it", append([]string{"notes.txt"}, own...), "holds notes.txt, not written by tracksum-test"},
		{"a user's file in its subdirectory", append([]string{"sub/mine.txt"}, own...), "holds sub/mine.txt"},
		{"a user's directory", append([]string{"other/important.txt"}, own...), "holds other/"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			final := filepath.Join(t.TempDir(), "out")
			for _, f := range tc.files {
				p := filepath.Join(final, filepath.FromSlash(f))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			d, err := NewDirWith(final, DirOptions{Overwrite: true, Previous: previous})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				d.Abort()
				return
			}
			if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrForeign containing %q", err, tc.want)
			}
			for _, f := range tc.files {
				if _, err := os.Stat(filepath.Join(final, filepath.FromSlash(f))); err != nil {
					t.Errorf("%s is gone: %v", f, err)
				}
			}
		})
	}
}

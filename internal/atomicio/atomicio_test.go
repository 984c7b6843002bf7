package atomicio

import (
	"errors"
	"io"
	"os"
	"path/filepath"
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

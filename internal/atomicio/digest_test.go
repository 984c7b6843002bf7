package atomicio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestSHA256(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		content  []byte // nil: no file
		wantSum  string
		wantSize int64
	}{
		// sha256sum of the empty file and of "abc\n".
		{"empty", []byte{}, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 0},
		{"abc", []byte("abc\n"), "edeaaff3f1774ad2888673770c6d64097e391bc362d7d6fb34982ddf0efd18cb", 4},
		{"missing", nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if tt.content != nil {
				if err := os.WriteFile(path, tt.content, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sum, size, err := SHA256(path)
			if tt.content == nil {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("SHA256 of a missing file: err %v, want one wrapping fs.ErrNotExist", err)
				}
				return
			}
			if err != nil || sum != tt.wantSum || size != tt.wantSize {
				t.Errorf("SHA256 = %s, %d, %v; want %s, %d", sum, size, err, tt.wantSum, tt.wantSize)
			}
		})
	}
}

package tensorio

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReadTensorsErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		desc string
		data []byte
	}{
		{"too short", []byte{1, 2}},
		{"header past the end", []byte{0xff, 0, 0, 0, 0, 0, 0, 0, '{', '}'}},
		{"bad json", append([]byte{2, 0, 0, 0, 0, 0, 0, 0}, '{', 'x')},
		{"data range too small", append([]byte{62, 0, 0, 0, 0, 0, 0, 0}, []byte(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}        `)...)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := filepath.Join(dir, "x.safetensors")
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadTensors(p); !errors.Is(err, ErrBadFile) {
				t.Errorf("err = %v, want ErrBadFile", err)
			}
		})
	}
	if _, err := ReadTensors(filepath.Join(dir, "missing")); !errors.Is(err, ErrBadFile) {
		t.Errorf("missing file: err = %v", err)
	}
}

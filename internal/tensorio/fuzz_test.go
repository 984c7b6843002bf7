package tensorio

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// FuzzReadTensors feeds arbitrary bytes to the safetensors reader: it must return
// ErrBadFile or tensors that WriteTensors writes back and ReadTensors reads again
// bit-identically; never panic or allocate more than the file holds. Seeds: testdata/fuzz.
//
//	GOEXPERIMENT=simd go test ./internal/tensorio -run '^$' -fuzz '^FuzzReadTensors$' -fuzztime 60s
func FuzzReadTensors(f *testing.F) {
	f.Add(append([]byte{62, 0, 0, 0, 0, 0, 0, 0}, []byte(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}        `+"\x00\x00\x80\x3f\x00\x00\x00\x40")...))
	f.Add(append([]byte{56, 0, 0, 0, 0, 0, 0, 0}, []byte(`{"__metadata__":{"format":"gomlx"},"b":{"dtype":"BOOL","shape":[],"data_offsets":[0,1]}}`+"\x01")...))
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "in.safetensors")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTensors(path)
		if err != nil {
			if !errors.Is(err, ErrBadFile) {
				t.Fatalf("error is not ErrBadFile: %v", err)
			}
			return
		}
		back := filepath.Join(dir, "back.safetensors")
		if err := WriteTensors(back, got); err != nil {
			t.Fatalf("write back: %v", err)
		}
		again, err := ReadTensors(back)
		if err != nil {
			t.Fatalf("read back: %v", err)
		}
		if len(again) != len(got) {
			t.Fatalf("%d tensors read back, want %d", len(again), len(got))
		}
		for name, a := range got {
			b := again[name]
			if b == nil || !a.Shape().Equal(b.Shape()) || !bytes.Equal(tensorBytes(t, a), tensorBytes(t, b)) {
				t.Fatalf("tensor %q differs after a round trip", name)
			}
		}
	})
}

func tensorBytes(t *testing.T, x *tensors.Tensor) []byte {
	var out []byte
	if err := x.ConstBytes(func(b []byte) { out = bytes.Clone(b) }); err != nil {
		t.Fatal(err)
	}
	return out
}

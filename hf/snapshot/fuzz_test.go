package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSnapshotHeader feeds arbitrary bytes as a snapshot's model.safetensors: Open (the shared
// header check of tensorio.ReadSafetensorsHeader, then go-huggingface's reader) and reading every
// tensor must return a one-line error or tensors whose shapes match the header; never panic or
// allocate more than the file holds. Seeds: testdata/fuzz (issue 22's negative dimension,
// wrapping sizes and overlaps among them).
//
//	GOEXPERIMENT=simd go test ./hf/snapshot -run '^$' -fuzz '^FuzzSnapshotHeader$' -fuzztime 60s
func FuzzSnapshotHeader(f *testing.F) {
	for _, h := range []string{
		`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
		`{"w":{"dtype":"F32","shape":[-64],"data_offsets":[0,0]}}`,
		`{"w":{"dtype":"F32","shape":[2147483648,2147483648,4],"data_offsets":[0,0]}}`,
		`{"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}}`,
		`{"__metadata__":{"format":"pt"},"w":{"dtype":"F16","shape":[],"data_offsets":[0,2]}}`,
		`{"w":{"dtype":"F32","shape":[32],"data_offsets":[-128,0]}}`,
	} {
		f.Add(append(append([]byte{byte(len(h)), 0, 0, 0, 0, 0, 0, 0}, h...), make([]byte, 8)...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, ConfigFile), `{"model_type": "llama"}`)
		writeFile(t, filepath.Join(dir, TokenizerFile), `{}`)
		writeFile(t, filepath.Join(dir, TokenizerConfigFile), `{}`)
		if err := os.WriteFile(filepath.Join(dir, WeightsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		ts, err := s.Tensors(context.Background(), nil)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		for name, tensor := range ts {
			if shape, ok := s.Shape(name); !ok || !shape.Equal(tensor.Shape()) {
				t.Fatalf("tensor %s: read %s, header %s", name, tensor.Shape(), shape)
			}
		}
	})
}

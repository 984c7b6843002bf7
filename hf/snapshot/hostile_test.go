package snapshot

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/internal/tensorio"
)

// writeRawHeader writes a safetensors file with the given JSON header (as is) and data bytes.
func writeRawHeader(t *testing.T, path, header string, data []byte) {
	t.Helper()
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	out = append(out, data...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// openErr opens dir and returns its error, which must be one line.
func openErr(t *testing.T, dir string) error {
	t.Helper()
	_, err := Open(dir)
	if err == nil {
		t.Fatal("Open succeeded, want an error")
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q spans several lines", err)
	}
	return err
}

// TestSnapshotNegativeDimension: issue 22 defect 1. A tensor with a negative dimension, even one
// no model reads, made shapes.Make panic inside Open; it must be a one-line error naming the file
// and the tensor, from the same header check our checkpoints use (tensorio.ReadSafetensorsHeader).
func TestSnapshotNegativeDimension(t *testing.T) {
	dir := makeSnapshot(t)
	w := goodWeights()
	w["unused.extra"] = rawTensor{"F32", []int{-64}, nil}
	writeSafetensors(t, filepath.Join(dir, WeightsFile), w)
	err := openErr(t, dir)
	want := filepath.Join(dir, WeightsFile) + ": tensor unused.extra: shape [-64] has a negative dimension"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if !errors.Is(err, tensorio.ErrBadFile) {
		t.Fatalf("error %q does not wrap tensorio.ErrBadFile", err)
	}
}

// TestSnapshotHeaderSizesThatWrap: issue 22 defect 10 and its rough edges. A shape whose byte
// size wraps to 0, overlapping tensors, a negative offset and an absolute shard path are refused
// with one-line errors that say what is wrong.
func TestSnapshotHeaderSizesThatWrap(t *testing.T) {
	four := f32Bytes(1, 2, 3, 4)
	for _, tc := range []struct {
		desc   string
		header string
		data   []byte
		want   string
	}{
		{"byte size wraps to 0", `{"w":{"dtype":"F32","shape":[2147483648,2147483648,4],"data_offsets":[0,0]}}`, nil,
			"tensor w: shape [2147483648 2147483648 4] F32 is too large (its byte size overflows)"},
		{"dims wrap through a large product", `{"w":{"dtype":"BF16","shape":[4611686018427387904,4],"data_offsets":[0,0]}}`, nil,
			"is too large (its byte size overflows)"},
		{"same offsets twice", `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, four,
			"tensors a [0, 16) and b [0, 16) overlap"},
		{"partial overlap", `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, four,
			"tensors a [0, 8) and b [4, 12) overlap"},
		{"negative offset", `{"w":{"dtype":"F32","shape":[32],"data_offsets":[-128,0]}}`, four,
			"tensor w: data_offsets [-128 0]: an offset is negative"},
		{"end before begin", `{"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}}`, four,
			"tensor w: data_offsets [8 4]: end before begin"},
		{"range past the end", `{"w":{"dtype":"F32","shape":[4],"data_offsets":[4,20]}}`, four,
			"truncated: tensor w ends at data byte 20, the file holds 16 after its header"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := makeSnapshot(t)
			writeRawHeader(t, filepath.Join(dir, WeightsFile), tc.header, tc.data)
			err := openErr(t, dir)
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), filepath.Join(dir, WeightsFile)+": ") {
				t.Fatalf("error %q, want one naming %s and containing %q", err, WeightsFile, tc.want)
			}
		})
	}
	t.Run("absolute shard path", func(t *testing.T) {
		dir := makeSharded(t)
		abs := filepath.Join(dir, "model-00002-of-00002.safetensors")
		writeFile(t, filepath.Join(dir, WeightsIndexFile), `{"weight_map": {
			"embeddings.word_embeddings.weight": "model-00001-of-00002.safetensors",
			"pooler.dense.bias": "`+abs+`"}}`)
		err := openErr(t, dir)
		if want := `shard path "` + abs + `" (for 1 tensors, e.g. pooler.dense.bias) is not a relative path inside the snapshot`; !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q, want it to contain %q", err, want)
		}
	})
	t.Run("shard path out of the snapshot", func(t *testing.T) {
		dir := makeSharded(t)
		writeFile(t, filepath.Join(dir, WeightsIndexFile), `{"weight_map": {"pooler.dense.bias": "../model-00002-of-00002.safetensors"}}`)
		if err := openErr(t, dir); !strings.Contains(err.Error(), "is not a relative path inside the snapshot") {
			t.Fatalf("error %q", err)
		}
	})
}

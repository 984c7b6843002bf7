package randsnap

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// TestParallelDrawSameBytes: the weights drawn ahead by several workers are the bytes one worker
// writes (each tensor's values depend on its name alone).
func TestParallelDrawSameBytes(t *testing.T) {
	d := Decoder{ModelType: "llama", Vocab: 300, Hidden: 32, Layers: 3, Heads: 4, KVHeads: 2, Intermediate: 64, Seed: 7}
	write := func(workers int) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(workers))
		dir := filepath.Join(t.TempDir(), "snap")
		if err := WriteDecoder(dir, d); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one, four := write(1), write(4)
	if !bytes.Equal(one, four) {
		t.Errorf("model.safetensors differs between 1 and 4 workers (%d and %d bytes)", len(one), len(four))
	}
}

// TestPrefetchStop: a writer that quits after the first tensor leaves no goroutine blocked on the
// ones drawn ahead (stop ends the drawing), and a name outside the list is computed when asked.
func TestPrefetchStop(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	asked := make(chan string, 16)
	get, stop := prefetch(names, func(n string) (_ *tensors.Tensor, _ error) {
		asked <- n
		return nil, nil
	}, 2)
	if _, err := get("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := get("z"); err != nil {
		t.Fatal(err)
	}
	stop()
	stop() // twice is harmless
	close(asked)
	seen := map[string]bool{}
	for n := range asked {
		seen[n] = true
	}
	if !seen["a"] || !seen["z"] || len(seen) > 4 {
		t.Errorf("computed %v: want a and z, and at most two drawn ahead", seen)
	}
}

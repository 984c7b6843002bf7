package crashtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracksum/tracksum/hf/randsnap"
)

// addSparseTensor appends to a snapshot's model.safetensors an unused float32 tensor of n values
// stored as a hole of zeros: gigabytes that take seconds to hash but no disk space.
func addSparseTensor(t *testing.T, path string, n int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hlen := binary.LittleEndian.Uint64(b)
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+hlen], &header); err != nil {
		t.Fatal(err)
	}
	data := b[8+hlen:]
	end := int64(len(data))
	header["zz_unused.weight"] = json.RawMessage(fmt.Sprintf(`{"dtype":"F32","shape":[%d],"data_offsets":[%d,%d]}`, n, end, end+4*n))
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(len(out))+4*n); err != nil {
		t.Fatal(err)
	}
}

// TestSignalDuringLoad: issue 22's "SIGTERM is not honoured during snapshot loading". A base's
// weights are read and hashed (base.json's digest) before training starts; no context reached
// them, so SIGTERM waited for all of it. The base here carries 8 GB of zeros (a sparse file) that
// take seconds to hash; SIGTERM a second into the run must end it within a few seconds, with
// exit code 143 and the "interrupted" message, wherever the load was.
func TestSignalDuringLoad(t *testing.T) {
	s := setup(t)
	s.env = []string{"TRACKSUM_TRACKER_MAX_SEQ_LEN=512", "TRACKSUM_CACHE_DIR=" + filepath.Join(s.work, "cache")}
	data := filepath.Join(s.work, "prepared-signal")
	s.run(t, "prepare", "--quiet", "--sample-size", "10", "--out", data)
	snap := filepath.Join(s.work, "snapshot-signal")
	if err := randsnap.WriteDecoder(snap, randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 16, Layers: 1, Heads: 2,
		KVHeads: 1, Intermediate: 32, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	addSparseTensor(t, filepath.Join(snap, "model.safetensors"), 2<<30) // 8 GB
	c := s.cmd("train", "--task", "tracker", "--pretrained", snap, "--head", "lm_cls", "--lora-rank", "4", "--data", data,
		"--max-steps", "2", "--quiet", "--out", filepath.Join(s.work, "ck-signal"))
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("train ended before the signal (%v): the base loads too fast to test\n%s", err, tail(out.Bytes()))
	case <-time.After(time.Second):
	}
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	select {
	case err := <-done:
		took := time.Since(sent)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 143 || !strings.Contains(out.String(), "interrupted") {
			t.Fatalf("train after SIGTERM: %v, want exit 143 and \"interrupted\"\n%s", err, tail(out.Bytes()))
		}
		if took > 3*time.Second {
			t.Errorf("train took %v to stop after SIGTERM", took)
		}
		t.Logf("stopped %v after SIGTERM: %s", took.Round(time.Millisecond), strings.TrimSpace(tail(out.Bytes())))
	case <-time.After(60 * time.Second):
		c.Process.Kill()
		t.Fatalf("train still running 60 s after SIGTERM\n%s", tail(out.Bytes()))
	}
}

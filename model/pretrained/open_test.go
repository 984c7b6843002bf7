package pretrained_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tracksum/tracksum/hf/peft"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/checkpoint/checkpointtest"
	ckopen "github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/pretrained/pretrainedtest"
)

// TestOpenerLoadsWhatOpenVerified checks that the pretrained opener reads a checkpoint's metadata
// (pretrained.json, adapter_config.json, base.json) and its tokenizer copies from the bytes Open
// verified: the same files changed on disk after Open are not read again.
func TestOpenerLoadsWhatOpenVerified(t *testing.T) {
	if testing.Short() {
		t.Skip("fine-tunes the tiny summarizer (a few seconds)")
	}
	ck := copyTree(t, pretrainedtest.Summarizer(t))
	ctx := context.Background()
	m, err := checkpoint.Open(ctx, ck)
	if err != nil {
		t.Fatal(err)
	}
	checkpointtest.BreakFiles(t, ck, checkpoint.PretrainedFile, filepath.Join(peft.AdapterDir, peft.ConfigFile), peft.BaseFile,
		snapshot.TokenizerFile, snapshot.TokenizerConfigFile)
	c, err := ckopen.Load(ctx, m, ckopen.Options{})
	if err != nil {
		t.Fatalf("loading the opened checkpoint read its files again: %v", err)
	}
	if _, ok := c.Model.(*pretrained.Summarizer); !ok {
		t.Fatalf("opened a %T, want *pretrained.Summarizer", c.Model)
	}
}

// copyTree copies the directory src into a temporary directory and returns the copy.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

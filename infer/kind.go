package infer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/pretrained"
)

// chatSource tells whether dir may be served as a chat model (LoadChatModel), from its manifest's
// kind as read returns it (checkpoint.Read, or open.Verify to verify it at once): a fine-tuned
// pretrained checkpoint of one model (a SUM-THEN-TRACK directory holds two), returned; or a
// Hugging Face snapshot (config.json, no manifest), returned as nil. Anything else is an error
// saying what dir is.
func chatSource(dir string, read func(string) (*checkpoint.Manifest, error)) (*checkpoint.Manifest, error) {
	m, err := read(dir)
	switch {
	case err == nil && m.Pretrained() && !(m.Kind == checkpoint.KindSumThenTrack && m.Part == ""):
		return m, nil
	case err == nil:
		return nil, fmt.Errorf("%s is %s checkpoint, not a causal LM", dir, article(m.Name()))
	}
	if st, serr := os.Stat(filepath.Join(dir, checkpoint.ManifestFile)); serr == nil && st.Mode().IsRegular() {
		return nil, err // a sealed checkpoint that does not open: say why
	}
	if st, err := os.Stat(filepath.Join(dir, snapshot.ConfigFile)); err == nil && st.Mode().IsRegular() {
		return nil, nil
	}
	return nil, fmt.Errorf("%s %s", dir, whatIs(dir))
}

// CanChat reports whether dir may be served as a chat model (LoadChatModel): a fine-tuned
// pretrained checkpoint or a snapshot.
func CanChat(dir string) bool {
	_, err := chatSource(dir, checkpoint.Read)
	return err == nil
}

// LoadChatModel loads dir as a causal LM answering conversations as itself (tracksum-serve's chat
// mode): a fine-tuned pretrained checkpoint (its base with the adapters or weights it trained) or
// a Hugging Face snapshot, computing in infer.precision (the checkpoint's own when empty; f32 for
// a snapshot).
func LoadChatModel(ctx context.Context, cfg *config.Config, dir string) (*pretrained.ChatModel, error) {
	m, err := chatSource(dir, func(dir string) (*checkpoint.Manifest, error) {
		return open.Verify(ctx, dir, "--model", open.Options{})
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: a chat model is a fine-tuned pretrained checkpoint (train --pretrained) or a Hugging Face snapshot", err)
	case m == nil:
		return pretrained.LoadChatSnapshot(ctx, dir, cfg.Infer.Precision)
	}
	// Verified once (chatSource); the backbone's opener loads it as a conversational model.
	c, err := open.Load(ctx, m, open.Options{Precision: cfg.Infer.Precision, Chat: true})
	if err != nil {
		return nil, err
	}
	return open.As[*pretrained.ChatModel](c, "--model", "a causal LM")
}

// whatIs says what dir, which holds neither a checkpoint nor a snapshot, is.
func whatIs(dir string) string {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case err != nil:
		return fmt.Sprintf("cannot be read (%v)", err)
	case !st.IsDir():
		return "is a file, not a model directory"
	}
	if st, err := os.Stat(filepath.Join(dir, dataset.ManifestFile)); err == nil && st.Mode().IsRegular() {
		return "is a prepared data directory (tracksum-prepare's output), not a model"
	}
	return fmt.Sprintf("holds no model (no %s of a tracksum checkpoint, no %s of a Hugging Face snapshot)", checkpoint.ManifestFile, snapshot.ConfigFile)
}

// article puts "a" or "an" before s.
func article(s string) string {
	if s != "" && (s[0] == 'a' || s[0] == 'e' || s[0] == 'i' || s[0] == 'o' || s[0] == 'u') {
		return "an " + s
	}
	return "a " + s
}

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
	"github.com/tracksum/tracksum/model/pretrained"
)

// Kind is what a model directory holds, as infer (and tracksum-serve, through it) tells them
// apart.
type Kind int

// The kinds of model directory.
const (
	// KindCheckpoint is anything else: a from-scratch checkpoint (its loader says what is
	// missing when it is none).
	KindCheckpoint Kind = iota
	// KindCrossValidation is a cross-validation directory (cv.json): a fold ensemble of trackers.
	KindCrossValidation
	// KindPretrained is a fine-tuned pretrained checkpoint (pretrained.json, train --pretrained).
	KindPretrained
	// KindSnapshot is a Hugging Face snapshot (config.json): a base model, as downloaded.
	KindSnapshot
)

// String names the kind as the docs do.
func (k Kind) String() string {
	switch k {
	case KindCrossValidation:
		return "cross-validation directory"
	case KindPretrained:
		return "fine-tuned pretrained checkpoint"
	case KindSnapshot:
		return "Hugging Face snapshot"
	}
	return "from-scratch checkpoint"
}

// KindOf returns the kind of the model directory dir: a checkpoint's from its manifest's
// description (checkpoint.Describe, the one function that tells checkpoints apart; a sealed
// checkpoint's files are verified when it is loaded), else a snapshot by its config.json.
func KindOf(dir string) Kind {
	if m, err := checkpoint.Describe(dir); err == nil {
		switch {
		case m.Kind == checkpoint.KindEnsemble || m.Kind == checkpoint.KindCrossValidation:
			return KindCrossValidation
		case m.Pretrained() && !(m.Kind == checkpoint.KindSumThenTrack && m.Part == ""):
			// One fine-tuned model (a SUM-THEN-TRACK directory holds two).
			return KindPretrained
		}
		return KindCheckpoint
	}
	if st, err := os.Stat(filepath.Join(dir, snapshot.ConfigFile)); err == nil && st.Mode().IsRegular() {
		return KindSnapshot
	}
	return KindCheckpoint
}

// CanChat reports whether dir may be served as a chat model (LoadChatModel): a fine-tuned
// pretrained checkpoint or a snapshot.
func CanChat(dir string) bool {
	k := KindOf(dir)
	return k == KindPretrained || k == KindSnapshot
}

// LoadChatModel loads dir as a causal LM answering conversations as itself (tracksum-serve's chat
// mode): a fine-tuned pretrained checkpoint (its base with the adapters or weights it trained) or
// a Hugging Face snapshot, computing in infer.precision (the checkpoint's own when empty; f32 for
// a snapshot).
func LoadChatModel(ctx context.Context, cfg *config.Config, dir string) (*pretrained.ChatModel, error) {
	switch k := KindOf(dir); k {
	case KindPretrained:
		if _, err := checkpoint.Open(ctx, dir); err != nil {
			return nil, err
		}
		return pretrained.LoadChatCheckpoint(ctx, dir, pretrained.LoadOptions{Precision: cfg.Infer.Precision})
	case KindSnapshot:
		return pretrained.LoadChatSnapshot(ctx, dir, cfg.Infer.Precision)
	default:
		return nil, fmt.Errorf("%s %s: a chat model is a fine-tuned pretrained checkpoint (train --pretrained) or a Hugging Face snapshot", dir, whatIs(dir, k))
	}
}

// whatIs says what dir, of kind k but no chat model, is: KindCheckpoint is also KindOf's answer
// for a directory that holds no model at all, or for no directory.
func whatIs(dir string, k Kind) string {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case err != nil:
		return fmt.Sprintf("cannot be read (%v)", err)
	case !st.IsDir():
		return "is a file, not a model directory"
	case k != KindCheckpoint:
		return fmt.Sprintf("is a %s, not a causal LM", k)
	}
	if _, err := checkpoint.Describe(dir); err == nil {
		return fmt.Sprintf("is a %s, not a causal LM", k)
	}
	if st, err := os.Stat(filepath.Join(dir, dataset.ManifestFile)); err == nil && st.Mode().IsRegular() {
		return "is a prepared data directory (tracksum-prepare's output), not a model"
	}
	return fmt.Sprintf("holds no model (no %s of a tracksum checkpoint, no %s of a Hugging Face snapshot)", checkpoint.ManifestFile, snapshot.ConfigFile)
}

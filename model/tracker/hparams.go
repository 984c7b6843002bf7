package tracker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// Architectures (tracker.architecture).
const (
	ArchTransformer = "transformer"
	ArchNgram       = "ngram"
)

// ErrCheckpoint marks a checkpoint directory that is missing, incomplete or incompatible.
// It wraps checkpoint.ErrCheckpoint, the one sentinel of every kind of checkpoint.
var ErrCheckpoint = fmt.Errorf("tracker %w", checkpoint.ErrCheckpoint)

// Hyperparams is everything needed to rebuild the graph, saved as hparams.json
// (checkpoint.HyperparamsFile) in a checkpoint.
type Hyperparams struct {
	Architecture string  `json:"architecture"`
	VocabSize    int     `json:"vocab_size"`
	DModel       int     `json:"d_model"`
	NumLayers    int     `json:"num_layers"`
	NumHeads     int     `json:"num_heads"`
	FFNDim       int     `json:"ffn_dim"`
	MaxLen       int     `json:"max_len"`
	Dropout      float64 `json:"dropout"`
	Lexical      bool    `json:"lexical"`
	NgramBuckets int     `json:"ngram_buckets"`
	NgramOrder   int     `json:"ngram_order"`
	// AspectSet names the aspect registry (dataset.Aspects) and Aspects its codes in index order.
	AspectSet string   `json:"aspect_set"`
	Aspects   []string `json:"aspects"`
	// AspectNames are the aspects' names, accepted by Score as well as the codes.
	AspectNames []string `json:"aspect_names"`
	// Threshold is the default decision threshold (tracker.threshold).
	Threshold float64 `json:"threshold"`
}

// NewHyperparams takes the model settings from the tracker config and the data facts.
// The lexical-context tracker has no network: its network keys are recorded as 0.
func NewHyperparams(c config.Tracker, vocabSize int, aspectSet string, codes, names []string) *Hyperparams {
	if c.Architecture == ArchLexicalContext {
		return &Hyperparams{Architecture: c.Architecture, VocabSize: vocabSize, MaxLen: c.MaxLen,
			AspectSet: aspectSet, Aspects: codes, AspectNames: names, Threshold: c.Threshold}
	}
	return &Hyperparams{
		Architecture: c.Architecture,
		VocabSize:    vocabSize,
		DModel:       c.DModel,
		NumLayers:    c.NumLayers,
		NumHeads:     c.NumHeads,
		FFNDim:       c.FFNDim,
		MaxLen:       c.MaxLen,
		Dropout:      c.Dropout,
		Lexical:      c.Lexical,
		NgramBuckets: c.NgramBuckets,
		NgramOrder:   c.NgramOrder,
		AspectSet:    aspectSet,
		Aspects:      codes,
		AspectNames:  names,
		Threshold:    c.Threshold,
	}
}

// AspectIndex returns the index of an aspect given by code (exact) or name (any case).
func (hp *Hyperparams) AspectIndex(aspect string) (int, bool) {
	for i, c := range hp.Aspects {
		if c == aspect {
			return i, true
		}
	}
	for i, n := range hp.AspectNames {
		if strings.EqualFold(n, aspect) {
			return i, true
		}
	}
	return 0, false
}

// MaxTokens is the number of sentence tokens kept (the aspect token takes one of MaxLen).
func (hp *Hyperparams) MaxTokens() int { return hp.MaxLen - 1 }

func readHyperparams(dir string) (*Hyperparams, error) {
	return readHyperparamsFrom(dir, checkpoint.DirFiles(dir))
}

// readHyperparamsFrom is readHyperparams of the checkpoint dir whose files r reads (an opened
// manifest: the bytes it verified).
func readHyperparamsFrom(dir string, r checkpoint.Reader) (*Hyperparams, error) {
	path := filepath.Join(dir, checkpoint.HyperparamsFile)
	var hp Hyperparams
	b, err := r.ReadFile(checkpoint.HyperparamsFile)
	if err == nil {
		err = atomicio.DecodeJSON(path, b, &hp, true)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no %s (not a tracker checkpoint, or training never started)", ErrCheckpoint, dir, checkpoint.HyperparamsFile)
		}
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if hp.Architecture != ArchTransformer && hp.Architecture != ArchNgram && hp.Architecture != ArchLexicalContext {
		return nil, fmt.Errorf("%w: %s: unknown architecture %q", ErrCheckpoint, path, hp.Architecture)
	}
	if hp.VocabSize < 1 || (hp.DModel < 1 && hp.Architecture != ArchLexicalContext) || hp.MaxLen < 2 || len(hp.Aspects) == 0 || len(hp.AspectNames) != len(hp.Aspects) {
		return nil, fmt.Errorf("%w: %s: incomplete hyperparameters", ErrCheckpoint, path)
	}
	return &hp, nil
}

// Identity is what a tracker checkpoint of hp states when it is sealed (checkpoint.Seal): a
// from-scratch tracker of its architecture, with the threshold it was trained with and its
// aspect set, which infer and serve read from the manifest.
func (hp Hyperparams) Identity() checkpoint.Identity {
	return checkpoint.Identity{Kind: checkpoint.KindTracker, Task: checkpoint.KindTracker,
		Backbone: checkpoint.Backbone{Type: checkpoint.BackboneScratch, Architecture: hp.Architecture},
		Settings: checkpoint.Settings{AspectSet: hp.AspectSet, Threshold: hp.Threshold}}
}

package stt

import (
	"bytes"
	"context"
	"fmt"

	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/variant"
)

// init registers the opener of the from-scratch SUM-THEN-TRACK checkpoints (package open): the
// directory of both parts is a *Model, its summarizer part a *summarizer.Summarizer
// (role.Summarizer), its tracker part a *tracker.Model (role.PairTracker). Each part is loaded
// from its manifest as Open verified it (the parent's member): variant.json, the metadata and
// the tokenizers are not read again.
func init() {
	open.Register(checkpoint.KindSumThenTrack, checkpoint.BackboneScratch, func(ctx context.Context, m *checkpoint.Manifest, o open.Options) (any, error) {
		switch m.Part {
		case checkpoint.VariantSummarizerDir:
			return summarizer.LoadFrom(m)
		case checkpoint.VariantTrackerDir:
			return tracker.LoadFrom(m)
		}
		s, err := part[*summarizer.Summarizer](ctx, m, checkpoint.VariantSummarizerDir, o)
		if err != nil {
			return nil, err
		}
		t, err := part[*tracker.Model](ctx, m, checkpoint.VariantTrackerDir, o)
		if err != nil {
			return nil, err
		}
		return compose(s, t)
	})
}

// opened is a part of SUM-THEN-TRACK loaded as T, with the manifest it was loaded from.
type opened[T any] struct {
	model T
	*checkpoint.Manifest
}

// part loads the part name of the SUM-THEN-TRACK checkpoint m (open.Member) as T.
func part[T any](ctx context.Context, m *checkpoint.Manifest, name string, o open.Options) (opened[T], error) {
	c, err := open.Member(ctx, m, name, o)
	if err != nil {
		return opened[T]{}, err
	}
	t, err := open.As[T](c, "stt", "the "+name+" part of a from-scratch SUM-THEN-TRACK checkpoint")
	return opened[T]{model: t, Manifest: c.Manifest}, err
}

// compose is SUM-THEN-TRACK of its loaded parts, refused when they were trained with different
// tokenizers.
func compose(s opened[*summarizer.Summarizer], t opened[*tracker.Model]) (*Model, error) {
	sb, err := s.ReadFile(checkpoint.TokenizerFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", variant.ErrCheckpoint, err)
	}
	tb, err := t.ReadFile(checkpoint.TokenizerFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", variant.ErrCheckpoint, err)
	}
	if !bytes.Equal(sb, tb) {
		return nil, fmt.Errorf("%w: %s and %s were trained with different tokenizers", variant.ErrCheckpoint, s.Dir, t.Dir)
	}
	return &Model{Summarizer: s.model, Tracker: t.model, Decode: s.model.DecodeOptions(), Threshold: t.model.Threshold()}, nil
}

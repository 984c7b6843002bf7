package pretrained

import (
	"context"
	"fmt"

	"github.com/tracksum/tracksum/model/checkpoint"
	ckopen "github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/variant"
)

// init registers the openers of the fine-tuned pretrained checkpoints (package open): a tracker
// (*Tracker: role.Tracker, or SUM-THEN-TRACK's part: role.PairTracker), a summarizer
// (*Summarizer: role.Summarizer), SUM-THEN-TRACK (*SumThenTrack) and END-TO-END (*EndToEnd); with
// open.Options.Chat, any of one causal LM as a *ChatModel. Their manifests, verified, say the kind
// and part: variant.json is not read again.
func init() {
	for _, b := range []string{checkpoint.BackboneCausalLM, checkpoint.BackboneEncoder} {
		ckopen.Register(checkpoint.KindTracker, b, func(ctx context.Context, m *checkpoint.Manifest, o ckopen.Options) (any, error) {
			if o.Chat {
				return loadChatCheckpoint(ctx, m, m.Dir, LoadOptions{Precision: o.Precision})
			}
			return loadTracker(ctx, m, m.Dir, "", LoadOptions{Precision: o.Precision})
		})
	}
	ckopen.Register(checkpoint.KindSummarizer, checkpoint.BackboneCausalLM, opener(""))
	ckopen.Register(checkpoint.KindEndToEnd, checkpoint.BackboneCausalLM, opener(variant.EndToEnd))
	ckopen.Register(checkpoint.KindSumThenTrack, checkpoint.BackboneCausalLM, opener(variant.SumThenTrack))
}

// opener is the opener of the checkpoints of the method v ("" Track-then-Sum's summarizer).
func opener(v string) ckopen.Opener {
	return func(ctx context.Context, m *checkpoint.Manifest, o ckopen.Options) (any, error) {
		lo := LoadOptions{Precision: o.Precision}
		switch {
		case o.Chat && m.Kind == checkpoint.KindSumThenTrack && m.Part == "":
			return nil, fmt.Errorf("%w: %s holds two models (sum_then_track): serve one of its parts as a chat model", ErrCheckpoint, m.Dir)
		case o.Chat:
			return loadChatCheckpoint(ctx, m, m.Dir, lo)
		case v == variant.EndToEnd:
			s, err := loadSummarizer(ctx, m, m.Dir, v, lo)
			if err != nil {
				return nil, err
			}
			meta := variant.Meta{Variant: v, AspectSet: s.Meta.AspectSet, Pretrained: true}
			return &EndToEnd{S: s, Decode: s.DecodeOptions(), Meta: meta}, nil
		case v == "":
			return loadSummarizer(ctx, m, m.Dir, v, lo)
		}
		switch m.Part {
		case checkpoint.VariantSummarizerDir:
			return loadSummarizer(ctx, m, m.Dir, v, lo)
		case checkpoint.VariantTrackerDir:
			return loadTracker(ctx, m, m.Dir, v, lo)
		}
		return sumThenTrack(ctx, m, lo)
	}
}

// sumThenTrack loads SUM-THEN-TRACK from the parts of m, loaded from their manifests as Open
// verified them (members of m's): pretrained.json and variant.json are not read again.
func sumThenTrack(ctx context.Context, m *checkpoint.Manifest, lo LoadOptions) (*SumThenTrack, error) {
	sm, err := m.OpenMember(ctx, checkpoint.VariantSummarizerDir)
	if err != nil {
		return nil, err
	}
	tm, err := m.OpenMember(ctx, checkpoint.VariantTrackerDir)
	if err != nil {
		return nil, err
	}
	s, err := loadSummarizer(ctx, sm, sm.Dir, variant.SumThenTrack, lo)
	if err != nil {
		return nil, err
	}
	t, err := loadTracker(ctx, tm, tm.Dir, variant.SumThenTrack, lo)
	if err != nil {
		return nil, err
	}
	return composeSumThenTrack(s, t, sm.Dir, tm.Dir)
}

// composeSumThenTrack is SUM-THEN-TRACK of its loaded parts, refused when they were trained on
// different aspect sets.
func composeSumThenTrack(s *Summarizer, t *Tracker, summarizerDir, trackerDir string) (*SumThenTrack, error) {
	if s.Meta.AspectSet != t.Meta.AspectSet {
		return nil, fmt.Errorf("%w: %s (aspect set %s) and %s (aspect set %s) were trained on different aspect sets",
			ErrCheckpoint, summarizerDir, s.Meta.AspectSet, trackerDir, t.Meta.AspectSet)
	}
	return &SumThenTrack{Summarizer: s, Tracker: t, Decode: s.DecodeOptions(), Threshold: DefaultPairThreshold}, nil
}

// AspectSet returns the aspect set the tracker was trained on.
func (t *Tracker) AspectSet() string { return t.Meta.AspectSet }

// AspectSet returns the aspect set the summarizer was trained on.
func (s *Summarizer) AspectSet() string { return s.Meta.AspectSet }

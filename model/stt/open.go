package stt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/variant"
)

// init registers the opener of the from-scratch SUM-THEN-TRACK checkpoints (package open): the
// directory of both parts is a *Model, its summarizer part a *summarizer.Summarizer
// (role.Summarizer), its tracker part a *tracker.Model (role.PairTracker). Their verified
// manifests state the kind and part: variant.json is not read again.
func init() {
	open.Register(checkpoint.KindSumThenTrack, checkpoint.BackboneScratch, func(_ context.Context, m *checkpoint.Manifest, _ open.Options) (any, error) {
		switch m.Part {
		case checkpoint.VariantSummarizerDir:
			return summarizer.Load(m.Dir)
		case checkpoint.VariantTrackerDir:
			return tracker.Load(m.Dir)
		}
		return loadParts(filepath.Join(m.Dir, checkpoint.VariantSummarizerDir), filepath.Join(m.Dir, checkpoint.VariantTrackerDir))
	})
}

// loadParts is LoadParts of parts whose kind and part are known.
func loadParts(summarizerDir, trackerDir string) (*Model, error) {
	s, err := summarizer.Load(summarizerDir)
	if err != nil {
		return nil, err
	}
	t, err := tracker.Load(trackerDir)
	if err != nil {
		return nil, err
	}
	return compose(s, t, summarizerDir, trackerDir)
}

// compose is SUM-THEN-TRACK of its loaded parts, refused when they were trained with different
// tokenizers.
func compose(s *summarizer.Summarizer, t *tracker.Model, summarizerDir, trackerDir string) (*Model, error) {
	sb, err := os.ReadFile(filepath.Join(summarizerDir, checkpoint.TokenizerFile))
	if err != nil || !checkpoint.SameTokenizer(trackerDir, sb) {
		return nil, fmt.Errorf("%w: %s and %s were trained with different tokenizers", variant.ErrCheckpoint, summarizerDir, trackerDir)
	}
	return &Model{Summarizer: s, Tracker: t, Decode: s.DecodeOptions(), Threshold: t.Threshold()}, nil
}

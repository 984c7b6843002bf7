package summarizer

import (
	"context"

	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
)

// init registers the from-scratch summarizer's opener (package open): a summarizer checkpoint is
// a *Summarizer (role.Summarizer), loaded from the bytes Open verified (summarizer.json,
// tokenizer.json: not read again).
func init() {
	open.Register(checkpoint.KindSummarizer, checkpoint.BackboneScratch, func(_ context.Context, m *checkpoint.Manifest, _ open.Options) (any, error) {
		return LoadFrom(m)
	})
}

// LoadFrom loads the summarizer checkpoint of the manifest m, opened (verified) by the caller:
// its metadata and tokenizer from the bytes Open verified, not read again (the opener of a
// checkpoint holding summarizers, as SUM-THEN-TRACK's, loads its part with it).
func LoadFrom(m *checkpoint.Manifest) (*Summarizer, error) { return load(m.Dir, m) }

// AspectSet returns the aspect set the summarizer was trained on.
func (s *Summarizer) AspectSet() string { return s.Meta.AspectSet }

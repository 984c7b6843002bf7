package tracker

import (
	"context"

	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
)

// init registers the from-scratch tracker's opener (package open): a tracker checkpoint is a
// *Model (role.Tracker), loaded from the bytes Open verified (hparams.json, tokenizer.json,
// context.json: not read again).
func init() {
	open.Register(checkpoint.KindTracker, checkpoint.BackboneScratch, func(_ context.Context, m *checkpoint.Manifest, _ open.Options) (any, error) {
		return LoadFrom(m)
	})
}

// LoadFrom loads the tracker checkpoint of the manifest m, opened (verified) by the caller: its
// metadata, tokenizer and context files from the bytes Open verified, not read again (the
// opener of a checkpoint holding trackers, as SUM-THEN-TRACK's, loads its part with it).
func LoadFrom(m *checkpoint.Manifest) (*Model, error) { return load(m.Dir, m) }

// AspectSet returns the aspect set the model was trained on.
func (m *Model) AspectSet() string { return m.hp.AspectSet }

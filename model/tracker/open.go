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
		return load(m.Dir, m)
	})
}

// AspectSet returns the aspect set the model was trained on.
func (m *Model) AspectSet() string { return m.hp.AspectSet }

package ete

import (
	"context"

	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/variant"
)

// init registers the opener of the from-scratch END-TO-END checkpoints (package open): a *Model,
// whose S is the answerer (role.Answerer). Its verified manifest states the kind: variant.json is
// not read again (the aspect set is the summarizer's).
func init() {
	open.Register(checkpoint.KindEndToEnd, checkpoint.BackboneScratch, func(_ context.Context, m *checkpoint.Manifest, _ open.Options) (any, error) {
		s, err := summarizer.Load(m.Dir)
		if err != nil {
			return nil, err
		}
		return &Model{S: Answerer{s}, Decode: s.DecodeOptions(), Meta: variant.Meta{Variant: variant.EndToEnd, AspectSet: s.Meta.AspectSet}}, nil
	})
}

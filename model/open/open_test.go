package open_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/role"
)

// TestRegisterRefusesDuplicates checks that a second opener for one kind and backbone, or an
// incomplete registration, panics at init rather than one silently replacing the other.
func TestRegisterRefusesDuplicates(t *testing.T) {
	noop := func(context.Context, *checkpoint.Manifest, open.Options) (any, error) { return nil, nil }
	for _, tc := range []struct {
		name           string
		kind, backbone string
		fn             open.Opener
	}{
		{"twice", checkpoint.KindTracker, toyBackbone, noop},
		{"no kind", "", "x", noop},
		{"no backbone", checkpoint.KindTracker, "", noop},
		{"no opener", checkpoint.KindTracker, "x", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q, %q) did not panic", tc.kind, tc.backbone)
				}
			}()
			open.Register(tc.kind, tc.backbone, tc.fn)
		})
	}
}

// TestOpenRefuses checks the one-line errors of a checkpoint no opener reads, of a flag's kind
// the checkpoint is not, and of a role its model does not implement.
func TestOpenRefuses(t *testing.T) {
	dir := toyCheckpoint(t, 1)
	ctx := context.Background()
	if _, err := open.OpenKind(ctx, dir, "--summarizer", open.Options{}, checkpoint.KindSummarizer); !errors.Is(err, checkpoint.ErrCheckpoint) ||
		!strings.Contains(err.Error(), dir+" is a tracker checkpoint; --summarizer wants a summarizer") {
		t.Errorf("OpenKind --summarizer of a tracker: %v", err)
	}
	c, err := open.Open(ctx, dir, open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.As[role.Summarizer](c, "--summarizer", "a summarizer"); !errors.Is(err, checkpoint.ErrCheckpoint) || strings.Contains(err.Error(), "\n") {
		t.Errorf("As a summarizer of the toy tracker: %v", err)
	}
	if c.Threshold() != 0.5 || c.AspectSet() == "" {
		t.Errorf("recorded threshold %g, aspect set %q: want the manifest's", c.Threshold(), c.AspectSet())
	}
	m := *c.Manifest
	m.Backbone.Type = "unknown"
	if _, err := open.Load(ctx, &m, open.Options{}); !errors.Is(err, checkpoint.ErrCheckpoint) || !strings.Contains(err.Error(), `backbone "unknown"`) ||
		!strings.Contains(err.Error(), "tracker/"+toyBackbone) {
		t.Errorf("Load of an unregistered backbone: %v", err)
	}
}

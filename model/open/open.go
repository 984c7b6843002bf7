// Package open is the one way in to a checkpoint: Open verifies its manifest once
// (checkpoint.Open) and hands it to the opener its backbone registered for its kind (Register,
// called from the backbone's init, as tasks register with model/training); the opener returns the
// loaded model, which implements the roles of package role (Tracker, PairTracker, Summarizer,
// Answerer) or a chat model. infer, serve, export and the cross-validation harness open
// checkpoints here and ask for roles (As), so that a new backbone registers an opener and needs no
// edit of them.
//
// An opener reads the files its manifest lists and no other metadata: the manifest (kind, part,
// backbone, settings) is passed to it, not re-read.
package open

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/tracksum/tracksum/model/checkpoint"
)

// Options are what the command opening a checkpoint says about how to load it.
type Options struct {
	// Precision is infer.precision: the dtype a pretrained backbone computes in ("" its
	// checkpoint's).
	Precision string
	// Chat opens the checkpoint as a conversational model (tracksum-serve's chat mode) rather
	// than for its task; only a backbone that answers conversations honours it.
	Chat bool
	// Log receives the warning of a checkpoint without a manifest (checkpoint.MigrateHint), when
	// not nil.
	Log io.Writer
}

// Opener loads the checkpoint m describes (m.Dir, already verified by Open) and returns its
// model: a value implementing the roles the backbone implements.
type Opener func(ctx context.Context, m *checkpoint.Manifest, o Options) (any, error)

type key struct{ kind, backbone string }

var (
	mu      sync.RWMutex
	openers = map[key]Opener{}
)

// Register makes fn the opener of the checkpoints of kind (a checkpoint.Kind*) whose backbone
// type (checkpoint.Backbone.Type) is backbone. It is called from init functions: registering a
// pair twice is a programming error and panics.
func Register(kind, backbone string, fn Opener) {
	mu.Lock()
	defer mu.Unlock()
	k := key{kind, backbone}
	if kind == "" || backbone == "" || fn == nil {
		panic(fmt.Sprintf("open.Register(%q, %q): kind, backbone and opener are required", kind, backbone))
	}
	if _, dup := openers[k]; dup {
		panic(fmt.Sprintf("open.Register: an opener of %s checkpoints on backbone %s is already registered", kind, backbone))
	}
	openers[k] = fn
}

// Registered lists the registered (kind, backbone) pairs as "kind/backbone", sorted.
func Registered() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(openers))
	for k := range openers {
		out = append(out, k.kind+"/"+k.backbone)
	}
	slices.Sort(out)
	return out
}

// Checkpoint is an opened checkpoint: its manifest, verified, and the model its opener loaded.
type Checkpoint struct {
	*checkpoint.Manifest
	Model any
}

// Open verifies dir's manifest (checkpoint.Open) and loads it with the opener registered for its
// kind and backbone. Errors wrap checkpoint.ErrCheckpoint where the checkpoint is at fault.
func Open(ctx context.Context, dir string, o Options) (*Checkpoint, error) {
	return OpenKind(ctx, dir, "", o)
}

// OpenKind is Open for the checkpoint of a command's flag, refusing (before loading anything) a
// checkpoint of none of kinds with the one-line error of checkpoint.Manifest.Want; with no kinds,
// any.
func OpenKind(ctx context.Context, dir, flag string, o Options, kinds ...string) (*Checkpoint, error) {
	m, err := Verify(ctx, dir, flag, o, kinds...)
	if err != nil {
		return nil, err
	}
	return Load(ctx, m, o)
}

// Verify is OpenKind without loading: dir's manifest, verified (checkpoint.Open) and of one of
// kinds (any with none), a migrated checkpoint's warning to o.Log. It is for a command that
// checks a checkpoint before loading it (Load loads the manifest it returns), or that reads its
// files itself rather than running its model (tracksum-export merges a pretrained checkpoint's
// adapters into its base; --folds-from reads a cross-validation's records).
func Verify(ctx context.Context, dir, flag string, o Options, kinds ...string) (*checkpoint.Manifest, error) {
	if len(kinds) == 0 {
		kinds = allKinds
	}
	return checkpoint.OpenKind(ctx, dir, flag, o.Log, kinds...)
}

// allKinds lets OpenKind without kinds take any checkpoint.
var allKinds = []string{checkpoint.KindTracker, checkpoint.KindSummarizer, checkpoint.KindSumThenTrack,
	checkpoint.KindEndToEnd, checkpoint.KindEnsemble, checkpoint.KindCrossValidation}

// Load loads the checkpoint of the manifest m, opened (verified) by the caller, with its
// registered opener.
func Load(ctx context.Context, m *checkpoint.Manifest, o Options) (*Checkpoint, error) {
	mu.RLock()
	fn := openers[key{m.Kind, m.Backbone.Type}]
	mu.RUnlock()
	if fn == nil {
		return nil, fmt.Errorf("%w: %s is %s checkpoint on backbone %q, which this build has no opener for (registered: %s)",
			checkpoint.ErrCheckpoint, m.Dir, article(m.Name()), m.Backbone.Type, strings.Join(Registered(), ", "))
	}
	model, err := fn(ctx, m, o)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{Manifest: m, Model: model}, nil
}

// Member loads the member name (a fold, a part) of the checkpoint m opened by the caller, with
// its registered opener, from the manifest Open verified with m's (Manifest.Member: its files
// not read again); the member of a migrated checkpoint, whose members Open did not walk, is
// opened from its directory.
func Member(ctx context.Context, m *checkpoint.Manifest, name string, o Options) (*Checkpoint, error) {
	sub, err := m.OpenMember(ctx, name)
	if err != nil {
		return nil, err
	}
	return Load(ctx, sub, o)
}

// OpenAs is the one way in of the packages' own loaders (stt.Load, ete.Load, pretrained's
// LoadSumThenTrack, ...): dir opened as OpenKind opens a flag's checkpoint of kind, its model
// returned as T, or refused in one line naming caller and wants (the model it loads).
func OpenAs[T any](ctx context.Context, dir, caller string, o Options, kind, wants string) (T, error) {
	c, err := OpenKind(ctx, dir, caller, o, kind)
	if err != nil {
		var zero T
		return zero, err
	}
	return As[T](c, caller, wants)
}

// As returns c's model as the role T, or the error, for flag, of a checkpoint whose model does
// not implement it: wants names the role ("a tracker").
func As[T any](c *Checkpoint, flag, wants string) (T, error) {
	if r, ok := c.Model.(T); ok {
		return r, nil
	}
	var zero T
	return zero, c.Refuse(flag, wants)
}

// Threshold returns the decision threshold the checkpoint records: its manifest's, else (a
// checkpoint sealed before manifests recorded it) its model's own (a Threshold method), else 0.
func (c *Checkpoint) Threshold() float64 {
	if t, ok := c.Model.(interface{ Threshold() float64 }); ok {
		return cmp.Or(c.Settings.Threshold, t.Threshold())
	}
	return c.Settings.Threshold
}

// AspectSet returns the aspect set the checkpoint's model was trained on: its manifest's, else
// its model's (an AspectSet method), else "".
func (c *Checkpoint) AspectSet() string {
	if a, ok := c.Model.(interface{ AspectSet() string }); ok {
		return cmp.Or(c.Settings.AspectSet, a.AspectSet())
	}
	return c.Settings.AspectSet
}

func article(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

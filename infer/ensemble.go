package infer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/tracker"
)

// CVReportFile is the report a cross-validation directory holds (experiment/cv's cv.json, written last
// by `tracksum-train --task tracker --folds K`). Its presence makes --tracker DIR an ensemble of
// the fold checkpoints DIR/fold-k. (Package experiment/cv imports infer in its tests, so infer reads
// the two fields it needs itself rather than importing cv.)
const CVReportFile = checkpoint.CrossValidationFile

// ErrEnsemble marks a cross-validation directory that cannot be used as an ensemble tracker. It
// wraps checkpoint.ErrCheckpoint, as every model's checkpoint error does.
var ErrEnsemble = fmt.Errorf("tracker ensemble %w", checkpoint.ErrCheckpoint)

// Ensemble is a tracker made of the K fold checkpoints of a cross-validation: the probability of a
// sentence is the mean of the folds' probabilities (each fold applying its own context rescorer,
// as infer --tracker fold-k would). It implements role.Tracker, the role of its folds, and is
// safe for concurrent use.
type Ensemble struct {
	members []*tracker.Model
	dirs    []string
}

// IsCrossValidation reports whether dir is a finished cross-validation output (it holds cv.json).
func IsCrossValidation(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, CVReportFile))
	return err == nil && st.Mode().IsRegular()
}

// LoadEnsemble loads every fold checkpoint dir/fold-k (k < K of dir/cv.json) of a tracker
// cross-validation, as the directory holds them (unverified: tracksum-infer opens one through
// its verified manifest, package open). It fails when cv.json is unreadable or not the tracker's,
// when a fold checkpoint is missing or incomplete, and when the folds disagree on what makes
// their probabilities comparable per sentence: the aspect set and its order, the tokenizer (file
// and vocabulary size) and the sentence length kept (max_len).
func LoadEnsemble(dir string) (*Ensemble, error) {
	return loadEnsemble(dir, checkpoint.DirFiles(dir), func(name string) (*tracker.Model, checkpoint.Reader, error) {
		fold := filepath.Join(dir, name)
		m, err := tracker.Load(fold)
		return m, checkpoint.DirFiles(fold), err
	})
}

// loadFold loads the fold checkpoint name of a cross-validation and returns it with the reader
// of its files.
type loadFold func(name string) (*tracker.Model, checkpoint.Reader, error)

// loadEnsemble is LoadEnsemble of the cross-validation dir whose files r reads, its folds loaded
// by fold.
func loadEnsemble(dir string, r checkpoint.Reader, fold loadFold) (*Ensemble, error) {
	path := filepath.Join(dir, CVReportFile)
	var rep struct {
		Model string `json:"model"`
		K     int    `json:"k"`
	}
	if err := atomicio.ReadJSONFrom(r, dir, CVReportFile, &rep, false); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEnsemble, err) // names the file
	}
	switch {
	case rep.Model != "tracker":
		return nil, fmt.Errorf("%w: %s: model %q has no fold checkpoints (only a --cv-model tracker cross-validation does)", ErrEnsemble, path, rep.Model)
	case rep.K < 2:
		return nil, fmt.Errorf("%w: %s: k = %d, want >= 2", ErrEnsemble, path, rep.K)
	}
	e := &Ensemble{}
	var first tracker.Hyperparams
	var firstTok []byte
	for k := range rep.K {
		name := fmt.Sprintf("fold-%d", k)
		m, fr, err := fold(name)
		if err != nil {
			return nil, fmt.Errorf("%w: fold %d of %s: %w", ErrEnsemble, k, dir, err)
		}
		tok, err := fr.ReadFile(checkpoint.TokenizerFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEnsemble, err)
		}
		hp, foldDir := m.Hyperparams(), filepath.Join(dir, name)
		if k == 0 {
			first, firstTok = hp, tok
		} else {
			switch {
			case hp.AspectSet != first.AspectSet || !reflect.DeepEqual(hp.Aspects, first.Aspects) || !reflect.DeepEqual(hp.AspectNames, first.AspectNames):
				return nil, fmt.Errorf("%w: %s: aspects %s %v, but fold 0 has %s %v", ErrEnsemble, foldDir, hp.AspectSet, hp.Aspects, first.AspectSet, first.Aspects)
			case hp.VocabSize != first.VocabSize || !bytes.Equal(tok, firstTok):
				return nil, fmt.Errorf("%w: %s: another tokenizer than fold 0's (%s differs)", ErrEnsemble, foldDir, checkpoint.TokenizerFile)
			case hp.MaxLen != first.MaxLen:
				return nil, fmt.Errorf("%w: %s: max_len %d, but fold 0 has %d", ErrEnsemble, foldDir, hp.MaxLen, first.MaxLen)
			}
		}
		e.members = append(e.members, m)
		e.dirs = append(e.dirs, foldDir)
	}
	return e, nil
}

// Members returns the fold checkpoints' directories, in fold order.
func (e *Ensemble) Members() []string { return e.dirs }

// Hyperparams returns fold 0's hyperparameters (the folds agree on aspects, tokenizer and max_len).
func (e *Ensemble) Hyperparams() tracker.Hyperparams { return e.members[0].Hyperparams() }

// Threshold returns fold 0's decision threshold (tracker.threshold; the folds are trained with one
// config).
func (e *Ensemble) Threshold() float64 { return e.members[0].Threshold() }

// ScoreBatch implements role.Tracker: the mean over the folds of their ScoreBatch probabilities.
func (e *Ensemble) ScoreBatch(reqs []tracker.Request) ([][]float32, error) {
	sums := make([][]float64, len(reqs))
	for i, r := range reqs {
		sums[i] = make([]float64, len(r.Doc))
	}
	for k, m := range e.members {
		scores, err := m.ScoreBatch(reqs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.dirs[k], err)
		}
		for i, s := range scores {
			if len(s) != len(sums[i]) {
				return nil, fmt.Errorf("%s: %d scores for %d sentences", e.dirs[k], len(s), len(sums[i]))
			}
			for j, p := range s {
				sums[i][j] += float64(p)
			}
		}
	}
	out := make([][]float32, len(reqs))
	n := float64(len(e.members))
	for i, s := range sums {
		out[i] = make([]float32, len(s))
		for j, v := range s {
			out[i][j] = float32(v / n)
		}
	}
	return out, nil
}

// init registers the fold ensemble as the opener of a tracker cross-validation (package open).
func init() {
	open.Register(checkpoint.KindEnsemble, checkpoint.BackboneScratch, func(ctx context.Context, m *checkpoint.Manifest, o open.Options) (any, error) {
		// cv.json and each fold's files are read from the manifests Open verified: not again.
		return loadEnsemble(m.Dir, m, func(name string) (*tracker.Model, checkpoint.Reader, error) {
			c, err := open.Member(ctx, m, name, o)
			if err != nil {
				return nil, nil, err
			}
			t, err := open.As[*tracker.Model](c, "--tracker", "a from-scratch tracker fold")
			return t, c.Manifest, err
		})
	})
}

// AspectSet returns the folds' aspect set.
func (e *Ensemble) AspectSet() string { return e.Hyperparams().AspectSet }

// loadTracker loads --tracker dir through its backbone's opener (open.OpenKind): one tracker
// checkpoint (from scratch, fine-tuned from a pretrained model, or any registered backbone), or
// the ensemble of the fold checkpoints of a tracker cross-validation. It returns the tracker, its
// aspect set and the decision threshold its checkpoint records (the manifest's; for a checkpoint
// sealed before manifests recorded it, its model's; 0: none. Threshold resolves the one used).
func loadTracker(ctx context.Context, cfg *config.Config, dir string, log io.Writer) (Tracker, string, float64, error) {
	c, err := open.OpenKind(ctx, dir, "--tracker", open.Options{Precision: cfg.Infer.Precision, Log: log}, checkpoint.KindTracker, checkpoint.KindEnsemble)
	if err != nil {
		return nil, "", 0, err
	}
	t, err := open.As[Tracker](c, "--tracker", "a tracker")
	if err != nil {
		return nil, "", 0, err
	}
	switch m := t.(type) {
	case *Ensemble:
		fmt.Fprintf(log, "infer: tracker: ensemble of the %d fold checkpoints of %s (mean probability)\n", len(m.members), dir)
	case *pretrained.Tracker:
		fmt.Fprintf(log, "infer: tracker: %s fine-tuned from %s (head %s)\n", dir, m.Meta.ModelType, m.Meta.Head)
	}
	return t, c.AspectSet(), c.Threshold(), nil
}

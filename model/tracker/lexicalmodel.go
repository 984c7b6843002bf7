package tracker

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// ArchLexicalContext is the tracker.architecture of the lexical tracker with the context
// rescorer: LexicalBaseline at StageContext, fitted by Train and saved as checkpoint.LexicalFile
// plus checkpoint.ContextFile instead of network variables.
const ArchLexicalContext = config.TrackerLexicalContext

// LexicalFormat is the format name of checkpoint.LexicalFile; Load refuses any other.
const LexicalFormat = "tracksum-lexical-tracker/1"

// maxLexicalFileBytes bounds the checkpoint.LexicalFile Load reads (TracSum's is about 6 MB): a
// larger file is not one Train wrote.
const maxLexicalFileBytes = 1 << 30

// lexicalFile is the JSON of checkpoint.LexicalFile: the textbook model of every aspect (in the
// order of hparams.json's aspects; null for an aspect whose training rows lacked a class, which
// scores probability 0.5 before rescoring) and the optional calibration shifts. The context
// rescorer is context.json, the same file (and format) as the network trackers'.
type lexicalFile struct {
	// Format is LexicalFormat.
	Format string `json:"format"`
	// C is the inverse L2 strength the regressions were fitted with (TextbookC; informative).
	C float64 `json:"c"`
	// Aspects are the per-aspect vocabularies (terms, idf) and regressions (weights, bias).
	Aspects []*TextbookAspect `json:"aspects"`
	// Shifts are per-aspect logit shifts added before the sigmoid (null: none).
	Shifts []float64 `json:"shifts"`
}

// scoreExamples returns the probability of each example (Text set) before context rescoring: the
// textbook model's, shifted per aspect when the baseline has calibration shifts.
func (b *LexicalBaseline) scoreExamples(exs []Example) []float32 {
	if b.Shifts == nil {
		return b.Textbook.Score(exs)
	}
	out := make([]float32, len(exs))
	for i := range exs {
		e := &exs[i]
		out[i] = float32(sigmoid(b.Textbook.Logit(e) + b.Shifts[e.Aspect]))
	}
	return out
}

// writeLexical writes b into the checkpoint dir: ContextFile first, then LexicalFile, each
// atomically, so that a checkpoint with a LexicalFile is complete.
func writeLexical(dir string, b *LexicalBaseline) error {
	if b.Context == nil {
		return errors.New("tracker: lexical-context tracker without a context rescorer")
	}
	if err := checkpoint.WriteJSON(filepath.Join(dir, checkpoint.ContextFile), b.Context); err != nil {
		return err
	}
	return checkpoint.WriteJSON(filepath.Join(dir, checkpoint.LexicalFile),
		&lexicalFile{Format: LexicalFormat, C: TextbookC, Aspects: b.Textbook.Aspects, Shifts: b.Shifts})
}

// readLexical reads the lexical tracker of the checkpoint dir for `aspects` aspects, refusing a
// file Train could not have written (other format, sizes that disagree, non-finite numbers,
// duplicate terms) with an error naming it.
func readLexical(dir string, r checkpoint.Reader, aspects int) (*LexicalBaseline, error) {
	path := filepath.Join(dir, checkpoint.LexicalFile)
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no %s (a lexical-context checkpoint whose training did not finish)", dir, checkpoint.LexicalFile)
		}
		return nil, err
	}
	if st.Size() > maxLexicalFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than a lexical tracker holds (%d)", path, st.Size(), maxLexicalFileBytes)
	}
	var f lexicalFile
	if err := atomicio.ReadJSON(path, &f, true); err != nil {
		return nil, err
	}
	if err := f.check(aspects); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, a := range f.Aspects {
		if a != nil {
			a.index = make(map[string]int, len(a.Terms))
			for j, t := range a.Terms {
				a.index[t] = j
			}
		}
	}
	ctx, err := readContextRescorerFrom(dir, r, aspects)
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, fmt.Errorf("%s has no %s (a lexical-context checkpoint needs its context rescorer)", dir, checkpoint.ContextFile)
	}
	return &LexicalBaseline{Textbook: &Textbook{Aspects: f.Aspects}, Shifts: f.Shifts, Context: ctx}, nil
}

// check reports a lexicalFile that cannot score `aspects` aspects.
func (f *lexicalFile) check(aspects int) error {
	if f.Format != LexicalFormat {
		return fmt.Errorf("format %q, want %q", f.Format, LexicalFormat)
	}
	if len(f.Aspects) != aspects {
		return fmt.Errorf("%d aspects, hparams.json has %d", len(f.Aspects), aspects)
	}
	if f.Shifts != nil && len(f.Shifts) != aspects {
		return fmt.Errorf("%d shifts for %d aspects", len(f.Shifts), aspects)
	}
	if !finite(f.Shifts) {
		return errors.New("a non-finite shift")
	}
	for i, a := range f.Aspects {
		if a == nil {
			continue
		}
		switch {
		case len(a.IDF) != len(a.Terms):
			return fmt.Errorf("aspect %d: %d idf values for %d terms", i, len(a.IDF), len(a.Terms))
		case len(a.Weights) != len(a.Terms)+NumTextbookPos:
			return fmt.Errorf("aspect %d: %d weights for %d terms + %d position features", i, len(a.Weights), len(a.Terms), NumTextbookPos)
		case !finite(a.IDF) || !finite(a.Weights) || !finite([]float64{a.Bias}):
			return fmt.Errorf("aspect %d: a non-finite idf, weight or bias", i)
		}
		seen := make(map[string]bool, len(a.Terms))
		for _, t := range a.Terms {
			if t == "" || seen[t] {
				return fmt.Errorf("aspect %d: empty or duplicate term %q", i, t)
			}
			seen[t] = true
		}
		for _, v := range a.IDF {
			if v <= 0 {
				return fmt.Errorf("aspect %d: idf %g, want > 0", i, v)
			}
		}
	}
	return nil
}

func finite(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// trainLexical is Train for tracker.architecture lexical-context: it fits the textbook model on
// data.Train and the context rescorer on its out-of-fold logits of tc.LexicalCalibrationFolds
// inner folds of the train split (dealt with seed; FitLexicalBaseline at StageContext, the
// threshold tc.Threshold), writes them into outDir (whose hparams.json, tokenizer.json and
// config.yaml the caller wrote) and scores dev (and test with tc.ReportTest) as Load's model will.
// Dev is not read by the fit: there is no training loop to select on it.
func trainLexical(hp *Hyperparams, tc config.Tracker, seed int64, data *Data, outDir string, log io.Writer) (*Model, *Report, error) {
	t0 := time.Now()
	b, err := fitLexicalBaseline(data, StageContext, tc.LexicalCalibrationFolds, seed, tc.Threshold)
	if err != nil {
		return nil, nil, err
	}
	if err := writeLexical(outDir, b); err != nil {
		return nil, nil, err
	}
	secs := time.Since(t0).Seconds()
	fmt.Fprintf(log, "tracker: lexical-context: TF-IDF + logistic regression (C = %g, balanced) per aspect and the context rescorer on %d inner folds of the train split, %.1fs (%s, %s)\n",
		TextbookC, tc.LexicalCalibrationFolds, secs, checkpoint.LexicalFile, checkpoint.ContextFile)
	m := &Model{hp: hp, tok: data.Tokenizer, lexical: b, context: b.Context}
	rep := &Report{Backend: "none (no network)", Architecture: hp.Architecture, Stop: "fitted", TrainSeconds: secs, Threshold: tc.Threshold}
	if rep.Dev, err = m.Evaluate(data.Dev, tc.Threshold); err != nil {
		return nil, nil, err
	}
	if tc.ReportTest && len(data.Test.Examples) > 0 {
		if rep.Test, err = m.Evaluate(data.Test, tc.Threshold); err != nil {
			return nil, nil, err
		}
	}
	if err := checkpoint.WriteJSON(filepath.Join(outDir, checkpoint.ReportFile), rep); err != nil {
		return nil, nil, err
	}
	logSplitReports(log, rep)
	return m, rep, nil
}

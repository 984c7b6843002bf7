package cv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/infer/ground"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
)

// Models of the pipeline cross-validation (tracksum-train --task pipeline --folds K --cv-model M).
const (
	// ModelTTS scores Track-then-Sum and "tracker + copy" (the default pipeline).
	ModelTTS = "tts"
	// ModelTable6 adds TTS (+) f (a full-context summarizer per fold) and every method registered
	// with RegisterPipelineMethod (SUM-THEN-TRACK, END-TO-END): TracSum's Table 6.
	ModelTable6 = "table6"
)

// Sub-directories of a pipeline cross-validation: the component cross-validations it runs (or
// finds there: a finished cross-validation made on the same prepared directory, with the same
// seed, dev share and model settings, may be linked in instead).
const (
	TrackerDir        = "tracker"
	SummarizerDir     = "summarizer"
	SummarizerFullDir = "summarizer-full"
)

// pipelineModelStamp prefixes the model in a pipeline's cv-settings.json, so that a component
// directory is never taken for the pipeline's own.
const pipelineModelStamp = "pipeline/"

// PipelineMethod is a method of the pipeline table other than Track-then-Sum, trained and run per
// fold by the harness: SUM-THEN-TRACK and END-TO-END register one each from their packages.
type PipelineMethod struct {
	// Name is the method's short name: its predictions are OUT/Name.jsonl, its fold directories
	// OUT/Name/fold-k. Label is its table name (e.g. "STT").
	Name, Label string
	// Fold trains the method on fold f.Fold's train part (selected on its dev part: f.Assign) into
	// f.Dir and predicts every instance of the held-out abstracts f.Abstracts (one prediction per
	// aspect of each abstract, in order). It must resume or reuse what f.Dir already holds.
	Fold func(ctx context.Context, cfg *config.Config, f MethodFold) ([]dataset.Prediction, error)
	// Config, when set, returns the configuration the method decodes with (e.g. a variant's
	// summarizer settings, which override some decoding keys); its summarizer decoding keys key
	// the method's cached predictions, so that a change of a key the method overrides does not
	// decode it again. Nil: cfg's.
	Config func(cfg *config.Config) (*config.Config, error)
}

// MethodFold is what a PipelineMethod gets for one fold.
type MethodFold struct {
	// Data is the prepared directory; K the number of folds, Fold this one.
	Data    string
	K, Fold int
	// Dir is the method's directory for this fold (OUT/NAME/fold-k).
	Dir string
	// Assign places an abstract by PMID: dataset.SplitTrain, dataset.SplitDev, or "" for the
	// held-out fold (the same dev part as the tracker's and the summarizer's folds).
	Assign func(pmid string) string
	// Abstracts are the held-out abstracts, each with its annotated aspects.
	Abstracts []infer.Abstract
	// Threshold is the citation threshold of the pipeline (infer.Threshold: infer.threshold when
	// set, else the folds' tracker.threshold).
	Threshold          float64
	AllowChangedConfig bool
	Log                io.Writer
}

var methods struct {
	sync.Mutex
	list []PipelineMethod
}

// RegisterPipelineMethod adds a method to the table6 pipeline cross-validation (call it from an
// init function). It panics on an empty or duplicate name or a missing Fold function.
func RegisterPipelineMethod(m PipelineMethod) {
	methods.Lock()
	defer methods.Unlock()
	reserved := []string{"copy", "tts", "tts-f", TrackerDir, SummarizerDir, SummarizerFullDir, "references"}
	if m.Name == "" || m.Fold == nil || slices.Contains(reserved, m.Name) ||
		slices.ContainsFunc(methods.list, func(o PipelineMethod) bool { return o.Name == m.Name }) {
		panic(fmt.Sprintf("cv.RegisterPipelineMethod: method %q needs a new name (not %s) and a Fold function", m.Name, strings.Join(reserved, ", ")))
	}
	if m.Label == "" {
		m.Label = m.Name
	}
	methods.list = append(methods.list, m)
}

func pipelineMethods() []PipelineMethod {
	methods.Lock()
	defer methods.Unlock()
	return slices.Clone(methods.list)
}

// PipelineReport is CK/cv.json of a pipeline cross-validation.
type PipelineReport struct {
	Model     string  `json:"model"`
	Data      string  `json:"data"`
	K         int     `json:"k"`
	FoldSeed  int64   `json:"fold_seed"`
	Seed      int64   `json:"seed"`
	DevShare  float64 `json:"dev_share"`
	Threshold float64 `json:"threshold"`
	// Tracker is the tracker cross-validation's summary (sentence F1 etc., mean ± sd).
	Tracker map[string]Stat `json:"tracker"`
	// Systems are the pipelines scored by eval on every instance of the held-out folds (negatives
	// included): "copy" (tracker + copy), "tts", and with table6 "tts-f" and registered methods.
	Systems []*SystemScores `json:"systems"`
	// Comparisons: every system against tracker + copy, and TTS (+) f against TTS.
	Comparisons []*Comparison `json:"comparisons"`
	References  string        `json:"references"`
	// Seconds is the wall time of each stage of this invocation (finished folds cost nothing).
	Seconds     map[string]float64 `json:"seconds"`
	WallSeconds float64            `json:"wall_seconds"`
}

// RunPipeline cross-validates the whole pipeline on the folds of opts.Data: the tracker (opts.Out/
// tracker, RunOptions of Run), the summarizer on gold citations (opts.Out/summarizer,
// RunSummarizer) and, with ModelTable6, the full-context summarizer (opts.Out/summarizer-full) and
// the registered methods; each of them resumes or reuses what is already there. Then, per fold, it
// runs Track-then-Sum on the held-out abstracts with that fold's tracker scores (fold-k.json: what
// infer --tracker tracker/fold-k gives) and that fold's summarizer, and "tracker + copy", and scores
// every system with eval: opts.Out/NAME.jsonl, references.jsonl (every instance, negatives
// included) and cv.json (PipelineReport).
func RunPipeline(ctx context.Context, cfg *config.Config, opts Options) (*PipelineReport, error) {
	start := time.Now()
	folds, err := startRun(&opts, "pipeline", ModelTTS, ModelTable6)
	if err != nil {
		return nil, err
	}
	log := opts.Log
	insts, err := readInstances(opts.Data)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	keys, err := instanceKeys(opts.Data, insts, folds)
	if err != nil {
		return nil, err
	}
	lock, err := lockOut(opts.Out)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	// The threshold the pipeline cites at: infer.Threshold's rule (infer.threshold when set, else
	// the fold trackers' recorded tracker.threshold), recorded resolved in the settings record.
	threshold, _ := infer.Threshold(0, cfg, cfg.Tracker.Threshold)
	if err := checkPipelineSettings(cfg, opts, threshold); err != nil {
		return nil, err
	}
	pr := &pipelineRun{ctx: ctx, cfg: cfg, opts: opts, log: log, folds: folds, full: opts.Model == ModelTable6,
		seconds: map[string]float64{}, preds: map[string]map[[2]string]dataset.Prediction{}}
	trRep, err := pr.componentCVs()
	if err != nil {
		return nil, err
	}
	if pr.full {
		pr.extra = pipelineMethods()
	}

	pr.threshold = threshold
	pr.systems()
	grounder := infer.NewGrounder(cfg)
	for k := range folds.K {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cv: %w", err)
		}
		if err := pr.fold(k, heldOut(keys, insts, folds, k), grounder); err != nil {
			return nil, err
		}
	}

	t0 := time.Now()
	rep := &PipelineReport{Model: opts.Model, Data: opts.Data, K: folds.K, FoldSeed: folds.Seed, Seed: cfg.Seed, DevShare: opts.DevShare,
		Threshold: threshold, Tracker: trRep.Summary, References: ReferencesFile, Seconds: pr.seconds}
	if err := pr.score(rep, keys, insts); err != nil {
		return nil, err
	}
	pr.seconds["eval"] = time.Since(t0).Seconds()
	rep.WallSeconds = time.Since(start).Seconds()
	if err := writeReport(opts.Out, rep); err != nil {
		return nil, err
	}
	if err := writeTable(log, fmt.Sprintf("cv: pipeline (%s), %d folds, %d instances, judge %s", opts.Model, folds.K, len(keys), cfg.Eval.Judge),
		rep.Systems, rep.Comparisons); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "cv: pipeline: %.0fs (%s)\n", rep.WallSeconds, formatSeconds(pr.seconds))
	return rep, nil
}

// instanceKeys returns the (PMID, aspect) keys of insts in the order of every pipeline output
// (PMID, then the aspect set's order), refusing a PMID the folds do not place.
func instanceKeys(data string, insts map[[2]string]dataset.Instance, folds *dataset.Folds) ([][2]string, error) {
	man, err := dataset.ReadManifest(data)
	if err != nil {
		return nil, fmt.Errorf("cv: %w", err)
	}
	order := map[string]int{}
	for i, a := range dataset.Aspects(man.AspectSet) {
		order[a.Code] = i
	}
	keys := make([][2]string, 0, len(insts))
	for k := range insts {
		if folds.Fold(k[0]) < 0 {
			return nil, fmt.Errorf("cv: %s: PMID %s is in no fold of %s", data, k[0], dataset.SplitsFile)
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return order[a[1]] - order[b[1]]
	})
	return keys, nil
}

// checkPipelineSettings checks (or writes) the settings record of a pipeline cross-validation.
// The pipeline's own outputs are recomputed on every run; the settings record guards the
// registered methods' fold outputs, which are reused.
// Decoding keys may change between runs (the summarizer folds are decoded again, and the
// registered methods' cached predictions are keyed by them).
// Scoring (the eval section) is redone on every run too, so the record leaves it out (an
// earlier build recorded it at its defaults: the legacy record).
func checkPipelineSettings(cfg *config.Config, opts Options, threshold float64) error {
	recorded := withoutDecoding(cfg)
	// The threshold the pipeline cites at, recorded resolved, as earlier builds recorded
	// infer.threshold.
	recorded.Infer.Threshold = &threshold
	y, err := sectionsYAML(recorded, append(slices.Clone(recordedSections), "tracker", "summarizer", "variants", "infer")...)
	if err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	noEval := *recorded
	noEval.Eval = config.Default().Eval
	legacy, err := noEval.YAML()
	if err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	return checkSettingsOf(opts.Out, opts.Data, map[string]any{"model": pipelineModelStamp + opts.Model, "dev_share": opts.DevShare},
		configRecord{YAML: y, Legacy: legacy}, TrackerDir, SummarizerDir, SummarizerFullDir)
}

// pipelineRun is the state RunPipeline's stages share: the component cross-validations, the
// per-fold runs that fill preds (system name -> (PMID, aspect) -> prediction) and the scoring.
type pipelineRun struct {
	ctx   context.Context
	cfg   *config.Config
	opts  Options
	log   io.Writer
	folds *dataset.Folds
	// full is ModelTable6: TTS (+) f and the registered methods (extra) run too.
	full      bool
	extra     []PipelineMethod
	threshold float64
	// trackerDir is the tracker cross-validation whose fold-k.json scores the pipeline uses.
	trackerDir string
	names      []string
	labels     map[string]string
	preds      map[string]map[[2]string]dataset.Prediction
	// seconds is the wall time of each stage (PipelineReport.Seconds).
	seconds map[string]float64
}

// componentCVs runs (or resumes, or reuses) the tracker, the summarizer and, with ModelTable6,
// the full-context summarizer cross-validations under opts.Out, and returns the tracker's report.
func (pr *pipelineRun) componentCVs() (*Report, error) {
	ctx, cfg, opts := pr.ctx, pr.cfg, pr.opts
	sub := Options{Data: opts.Data, Folds: pr.folds.K, DevShare: opts.DevShare, AllowChangedConfig: opts.AllowChangedConfig, Log: pr.log}
	t0 := time.Now()
	trOpts := sub
	trOpts.Out, trOpts.Model = filepath.Join(opts.Out, TrackerDir), ModelTracker
	pr.trackerDir = trOpts.Out
	// A lexical cross-validation already in OUT/tracker (the strong baseline, or lexical-context,
	// the best tracker found and the default architecture, docs/tracker.md) is used as the
	// tracker: the pipeline needs the folds' scores, not checkpoints.
	var prev map[string]any
	if err := readJSONFile(filepath.Join(trOpts.Out, SettingsFile), &prev); err == nil &&
		(prev["model"] == ModelLexical || prev["model"] == ModelLexicalContext) {
		trOpts.Model = prev["model"].(string)
	}
	trRep, err := Run(ctx, onlySection(cfg, "tracker"), trOpts)
	if err != nil {
		return nil, err
	}
	pr.stage("tracker_cv", t0)
	t0 = time.Now()
	smOpts := sub
	smOpts.Out, smOpts.Model = filepath.Join(opts.Out, SummarizerDir), ModelSummarizer
	if _, err := RunSummarizer(ctx, cfg, smOpts); err != nil {
		return nil, err
	}
	pr.stage("summarizer_cv", t0)
	if pr.full {
		t0 = time.Now()
		fc := *cfg
		fc.Summarizer.FullContext = true
		fOpts := smOpts
		fOpts.Out = filepath.Join(opts.Out, SummarizerFullDir)
		if _, err := RunSummarizer(ctx, &fc, fOpts); err != nil {
			return nil, err
		}
		pr.stage("summarizer_full_cv", t0)
	}
	return trRep, nil
}

// stage records the wall time of a stage begun at t0.
func (pr *pipelineRun) stage(name string, t0 time.Time) { pr.seconds[name] = time.Since(t0).Seconds() }

// systems names the systems the pipeline scores, in report order, with their table labels.
func (pr *pipelineRun) systems() {
	pr.names = []string{"copy", "tts"}
	pr.labels = map[string]string{"copy": "tracker + copy", "tts": "TTS"}
	if pr.full {
		pr.names = append(pr.names, "tts-f")
		pr.labels["tts-f"] = "TTS (+) f"
	}
	for _, m := range pr.extra {
		pr.names = append(pr.names, m.Name)
		pr.labels[m.Name] = m.Label
	}
	for _, n := range pr.names {
		pr.preds[n] = map[[2]string]dataset.Prediction{}
	}
}

// fold runs every system on fold k's held-out abstracts with that fold's tracker scores and
// summarizers, and the registered methods on their own fold outputs.
func (pr *pipelineRun) fold(k int, abstracts []infer.Abstract, grounder *ground.Grounder) error {
	ctx, cfg, opts, threshold := pr.ctx, pr.cfg, pr.opts, pr.threshold
	fr, err := readFoldResult(filepath.Join(pr.trackerDir, fmt.Sprintf("fold-%d.json", k)))
	if err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	tr, err := newFoldScores(fr, abstracts)
	if err != nil {
		return fmt.Errorf("cv: fold %d: %w", k, err)
	}
	run := func(name string, p *infer.Pipeline) error {
		t0 := time.Now()
		res, err := infer.RunPipeline(ctx, p, abstracts, runtime.NumCPU(), nil)
		if err != nil {
			return fmt.Errorf("cv: fold %d, %s: %w", k, name, err)
		}
		for _, ps := range res {
			for _, p := range ps {
				pr.preds[name][[2]string{p.PMID, p.Aspect}] = p
			}
		}
		pr.seconds["infer_"+name] += time.Since(t0).Seconds()
		return nil
	}
	if err := run("copy", &infer.Pipeline{Tracker: tr, Summarizer: copySummarizer{}, Threshold: threshold}); err != nil {
		return err
	}
	for _, v := range []struct {
		name, dir string
		full      bool
	}{{"tts", SummarizerDir, false}, {"tts-f", SummarizerFullDir, true}} {
		if v.full && !pr.full {
			continue
		}
		s, err := openFoldSummarizer(pr.ctx, filepath.Join(opts.Out, v.dir, fmt.Sprintf("fold-%d", k)))
		if err != nil {
			return fmt.Errorf("cv: %w", err)
		}
		dec := decodingOf(cfg.Summarizer).apply(s) // as the summarizer cross-validation decodes
		if err := run(v.name, &infer.Pipeline{Tracker: tr, Summarizer: s, Decode: dec, Threshold: threshold, FullContext: v.full,
			Ground: grounder}); err != nil {
			return err
		}
	}
	part, _ := carve(pr.folds, k, opts.DevShare, cfg.Seed)
	for _, m := range pr.extra {
		t0 := time.Now()
		ps, err := methodFold(ctx, cfg, m, MethodFold{Data: opts.Data, K: pr.folds.K, Fold: k,
			Dir: filepath.Join(opts.Out, m.Name, fmt.Sprintf("fold-%d", k)), Assign: assigner(part), Abstracts: abstracts,
			Threshold: threshold, AllowChangedConfig: opts.AllowChangedConfig, Log: pr.log})
		if err != nil {
			return fmt.Errorf("cv: fold %d, %s: %w", k, m.Name, err)
		}
		for _, p := range ps {
			pr.preds[m.Name][[2]string{p.PMID, p.Aspect}] = p
		}
		pr.seconds["method_"+m.Name] += time.Since(t0).Seconds()
	}
	fmt.Fprintf(pr.log, "cv: pipeline fold %d/%d: %d abstracts run (%s)\n", k+1, pr.folds.K, len(abstracts), strings.Join(pr.names, ", "))
	return nil
}

// score writes references.jsonl and each system's predictions (in keys order) and scores them
// with eval into rep: every system, and each against "tracker + copy" (and TTS (+) f against TTS).
func (pr *pipelineRun) score(rep *PipelineReport, keys [][2]string, insts map[[2]string]dataset.Instance) error {
	ctx, cfg, opts := pr.ctx, pr.cfg, pr.opts
	refs := make([]dataset.Instance, len(keys))
	for i, key := range keys {
		refs[i] = insts[key]
	}
	refPath := filepath.Join(opts.Out, ReferencesFile)
	if err := atomicio.WriteJSONL(refPath, refs); err != nil {
		return fmt.Errorf("cv: %w", err)
	}
	systems := map[string]*SystemScores{}
	for _, n := range pr.names {
		out := make([]dataset.Prediction, len(keys))
		for i, key := range keys {
			p, ok := pr.preds[n][key]
			if !ok {
				return fmt.Errorf("cv: %s: no prediction for %s/%s", n, key[0], key[1])
			}
			out[i] = p
		}
		path := filepath.Join(opts.Out, n+".jsonl")
		if err := atomicio.WriteJSONL(path, out); err != nil {
			return fmt.Errorf("cv: %w", err)
		}
		s, err := scoreSystem(ctx, n, pr.labels[n], path, refPath, pr.folds, cfg.Eval)
		if err != nil {
			return fmt.Errorf("cv: %w", err)
		}
		systems[n] = s
		rep.Systems = append(rep.Systems, s)
	}
	pairs := [][2]string{}
	for _, n := range pr.names[1:] {
		pairs = append(pairs, [2]string{n, "copy"})
	}
	if pr.full {
		pairs = append(pairs, [2]string{"tts-f", "tts"})
	}
	for _, p := range pairs {
		c, err := compareSystems(ctx, systems[p[0]], systems[p[1]], refPath, cfg.Eval)
		if err != nil {
			return fmt.Errorf("cv: %w", err)
		}
		rep.Comparisons = append(rep.Comparisons, c)
	}
	return nil
}

// heldOut returns fold k's abstracts (keys order: PMID, then aspect order) with their aspects.
func heldOut(keys [][2]string, insts map[[2]string]dataset.Instance, folds *dataset.Folds, k int) []infer.Abstract {
	var out []infer.Abstract
	for _, key := range keys {
		if folds.Fold(key[0]) != k {
			continue
		}
		if n := len(out); n == 0 || out[n-1].PMID != key[0] {
			out = append(out, infer.Abstract{PMID: key[0], Document: insts[key].Document})
		}
		out[len(out)-1].Aspects = append(out[len(out)-1].Aspects, key[1])
	}
	return out
}

// assigner maps a fold's parts to the prepared split names of MethodFold.Assign.
func assigner(part map[string]int) func(string) string {
	return func(pmid string) string {
		p, ok := part[pmid]
		switch {
		case !ok || p == PartTest:
			return ""
		case p == PartDev:
			return dataset.SplitDev
		}
		return dataset.SplitTrain
	}
}

// methodFold runs a registered method on one fold, reusing its predictions when a previous run
// with the same summarizer decoding keys (m.Config's) finished that fold (Dir +
// ".decoding-HASH.jsonl").
func methodFold(ctx context.Context, cfg *config.Config, m PipelineMethod, f MethodFold) ([]dataset.Prediction, error) {
	decoding := cfg
	if m.Config != nil {
		c, err := m.Config(cfg)
		if err != nil {
			return nil, err
		}
		decoding = c
	}
	b, err := json.Marshal(decodingOf(decoding.Summarizer))
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256(b)
	cache := f.Dir + ".decoding-" + hex.EncodeToString(h[:4]) + ".jsonl"
	if recs, err := loadPredictions(cache); err == nil {
		return recs, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w (delete it to redo the fold)", err) // the error names the file
	}
	if err := os.MkdirAll(filepath.Dir(f.Dir), 0o755); err != nil {
		return nil, err
	}
	ps, err := m.Fold(ctx, cfg, f)
	if err != nil {
		return nil, err
	}
	return ps, atomicio.WriteJSONL(cache, ps)
}

// copySummarizer is infer's "extractive" summarizer: the tracked sentences joined with spaces.
type copySummarizer struct{}

func (copySummarizer) Summarize(reqs []summarizer.Request, _ decode.Options) ([]string, error) {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = strings.Join(r.Cited, " ")
	}
	return out, nil
}

// foldScores is an infer.Tracker that answers with a tracker fold's out-of-fold probabilities
// (fold-k.json), which equal what infer --tracker fold-k computes (tested in the tracker CV).
type foldScores struct {
	byDoc map[string]string // joined document -> PMID
	probs map[[2]string][]float32
}

func newFoldScores(fr *FoldResult, abstracts []infer.Abstract) (*foldScores, error) {
	f := &foldScores{byDoc: map[string]string{}, probs: map[[2]string][]float32{}}
	for _, a := range abstracts {
		f.byDoc[strings.Join(a.Document, "\n")] = a.PMID
		for _, asp := range a.Aspects {
			f.probs[[2]string{a.PMID, asp}] = make([]float32, len(a.Document))
		}
	}
	seen := map[[2]string]int{}
	for i, key := range fr.Keys {
		k := [2]string{key.PMID, key.Aspect}
		p, ok := f.probs[k]
		if !ok {
			continue
		}
		if key.SentenceIndex < 0 || key.SentenceIndex >= len(p) {
			return nil, fmt.Errorf("tracker fold %d: sentence %d of %s/%s outside its %d-sentence abstract", fr.Fold, key.SentenceIndex, key.PMID, key.Aspect, len(p))
		}
		p[key.SentenceIndex] = fr.Scores[i]
		seen[k]++
	}
	for k, p := range f.probs {
		if seen[k] != len(p) {
			return nil, fmt.Errorf("tracker fold %d scored %d of the %d sentences of %s/%s (another prepared directory?)", fr.Fold, seen[k], len(p), k[0], k[1])
		}
	}
	return f, nil
}

// ScoreBatch implements infer.Tracker.
func (f *foldScores) ScoreBatch(reqs []tracker.Request) ([][]float32, error) {
	out := make([][]float32, len(reqs))
	for i, r := range reqs {
		pmid, ok := f.byDoc[strings.Join(r.Doc, "\n")]
		p, ok2 := f.probs[[2]string{pmid, r.Aspect}]
		if !ok || !ok2 {
			return nil, fmt.Errorf("abstract not in the held-out fold, or aspect %s not scored", r.Aspect)
		}
		out[i] = slices.Clone(p)
	}
	return out, nil
}

func formatSeconds(s map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, fmt.Sprintf("%s %.0fs", k, s[k]))
	}
	return strings.Join(parts, ", ")
}

// loadPredictions reads a JSONL file of dataset.Prediction records written by the harness.
func loadPredictions(path string) ([]dataset.Prediction, error) {
	var out []dataset.Prediction
	err := atomicio.ReadJSONL(path, atomicio.JSONLOptions{}, func(_ int, p dataset.Prediction) error {
		out = append(out, p)
		return nil
	})
	return out, err
}

// readJSONFile decodes the JSON file at path into v (atomicio.ReadJSON); a file that is there but
// does not decode is an error saying how to redo it.
func readJSONFile(path string, v any) error {
	err := atomicio.ReadJSON(path, v, false)
	var pathErr *fs.PathError
	if err != nil && !errors.As(err, &pathErr) {
		return fmt.Errorf("%w (delete it to redo the fold)", err)
	}
	return err
}

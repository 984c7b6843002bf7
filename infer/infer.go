// Package infer runs Track-then-Sum inference (TracSum section 5.1): for each abstract and aspect,
// the tracker scores every sentence, the sentences with probability >= threshold are kept, and the
// summarizer writes the aspect summary from them (optionally with the whole abstract as context).
// When no sentence is kept the prediction is the negative one: summary "Unknown." and no citation.
// Without a summarizer it is track-only inference: Summary is left empty, for citation metrics.
//
// Input is a prepared directory (one split of it), a TracSum/PCoA JSONL file (or any other
// dataset.Formats entry), or raw text abstracts, read by dataset.ReadInput; output is JSONL of
// dataset.Prediction records, which eval reads, with the per-sentence tracker Scores.
//
// # Example
//
//	err := infer.Run(ctx, cfg, infer.Options{Tracker: "checkpoints/tracker", Summarizer: "checkpoints/summ",
//		Input: "prepared/demo", Split: "test", Out: "runs/pred.jsonl"})
package infer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/hf/tokenizer"
	"github.com/tracksum/tracksum/infer/ground"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/internal/progress"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/role"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/subword"
)

// GoldTracker is the tracker "gold": it scores 1 the sentences the reference cites and 0 the
// others, so that the summarizer can be evaluated alone on gold citations (TracSum's oracle
// setting). It needs annotated input.
const GoldTracker = "gold"

// ExtractiveSummarizer is the summarizer "extractive": the summary is the tracked sentences
// themselves, joined with spaces (TracSum's "all cited sentences copied" baseline with --tracker
// gold).
const ExtractiveSummarizer = "extractive"

// extractive implements Summarizer by copying the cited sentences.
type extractive struct{}

// Summarize implements Summarizer.
func (extractive) Summarize(reqs []summarizer.Request, _ decode.Options) ([]string, error) {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = strings.Join(r.Cited, " ")
	}
	return out, nil
}

// goldScores implements Tracker from reference instances.
type goldScores struct {
	byKey map[[2]string][]int
	// pmid is the abstract being scored: ScoreBatch receives documents, not PMIDs.
	docs map[string]string
}

func newGoldScores(instances []dataset.Instance) *goldScores {
	g := &goldScores{byKey: map[[2]string][]int{}, docs: map[string]string{}}
	for _, in := range instances {
		g.byKey[[2]string{in.PMID, in.Aspect}] = in.Indexes
		g.docs[strings.Join(in.Document, "\n")] = in.PMID
	}
	return g
}

// ScoreBatch implements Tracker.
func (g *goldScores) ScoreBatch(reqs []tracker.Request) ([][]float32, error) {
	out := make([][]float32, len(reqs))
	for i, r := range reqs {
		pmid, ok := g.docs[strings.Join(r.Doc, "\n")]
		if !ok {
			return nil, fmt.Errorf("gold tracker: abstract not in the references")
		}
		out[i] = make([]float32, len(r.Doc))
		for _, j := range g.byKey[[2]string{pmid, r.Aspect}] {
			out[i][j] = 1
		}
	}
	return out, nil
}

// Abstract is one abstract to process with the aspects to summarize for it, in output order.
type Abstract struct {
	PMID     string
	Document []string
	Aspects  []string
}

// Tracker scores (sentence, aspect) pairs: role.Tracker (*tracker.Model, *pretrained.Tracker,
// the fold Ensemble, the gold tracker).
type Tracker = role.Tracker

// Summarizer writes summaries: role.Summarizer (*summarizer.Summarizer, *pretrained.Summarizer,
// the extractive baseline).
type Summarizer = role.Summarizer

// Pipeline holds the loaded models and settings.
type Pipeline struct {
	Tracker    Tracker
	Summarizer Summarizer // nil: track-only
	Decode     decode.Options
	Threshold  float64
	// FullContext passes the whole abstract to the summarizer as well.
	FullContext bool
	// Predictor, when not nil, replaces the tracker and the summarizer (--method).
	Predictor Predictor
	// Ground, when not nil, makes each summary and its citations agree (infer.grounding); Run
	// sets it for trained summarizers, not for the extractive baseline or an LLM.
	Ground *ground.Grounder
	// AspectSet is the aspect set the loaded checkpoints name ("" when none does: gold or LLM
	// components, LLM methods); set by LoadPipeline.
	AspectSet string
	// Tokenizer is the tokenizer of the model that writes the summaries (the summarizer, or the
	// variant's), in which a caller counts them (tracksum-serve's usage); nil when no trained
	// model writes them. Set by LoadPipeline.
	Tokenizer Tokenizer
	// grounded counts the citations Ground restored or pruned.
	grounded atomic.Int64
	// finish prints what the loaded models repaired over a run (END-TO-END's output parsing).
	finish func(log io.Writer)
}

// Tokenizer is a model's tokenizer seen as text in, ids out.
type Tokenizer interface {
	Encode(text string) []int
	Decode(ids []int) string
}

// Clone returns a pipeline with p's models and settings and its own count of grounded citations,
// whose fields a caller may change for one use (tracksum-serve: a request's max_tokens).
func (p *Pipeline) Clone() *Pipeline {
	return &Pipeline{Tracker: p.Tracker, Summarizer: p.Summarizer, Decode: p.Decode, Threshold: p.Threshold,
		FullContext: p.FullContext, Predictor: p.Predictor, Ground: p.Ground, AspectSet: p.AspectSet,
		Tokenizer: p.Tokenizer, finish: p.finish}
}

// Finish prints what the loaded models repaired so far (END-TO-END's output parsing); nothing for
// the others.
func (p *Pipeline) Finish(log io.Writer) {
	if p.finish != nil {
		p.finish(log)
	}
}

// Grounded returns how many citations Ground has restored or pruned so far.
func (p *Pipeline) Grounded() int64 { return p.grounded.Load() }

// ErrBadScore marks a tracker score that is not a probability (NaN, infinite or outside [0, 1]):
// the model diverged or its checkpoint is corrupt.
var ErrBadScore = errors.New("tracker score is not a probability")

// Process runs Track-then-Sum on one abstract: one prediction per aspect, in order.
func (p *Pipeline) Process(a Abstract) ([]dataset.Prediction, error) {
	if p.Predictor != nil {
		return p.Predictor.Predict(a)
	}
	reqs := make([]tracker.Request, len(a.Aspects))
	for i, asp := range a.Aspects {
		reqs[i] = tracker.Request{Doc: a.Document, Aspect: asp}
	}
	scores, err := p.Tracker.ScoreBatch(reqs)
	if err != nil {
		return nil, fmt.Errorf("abstract %s: %w", a.PMID, err)
	}
	if len(scores) != len(a.Aspects) {
		return nil, fmt.Errorf("abstract %s: tracker returned %d score lists for %d aspects", a.PMID, len(scores), len(a.Aspects))
	}
	for i, asp := range a.Aspects {
		if len(scores[i]) != len(a.Document) {
			return nil, fmt.Errorf("abstract %s, aspect %s: tracker returned %d scores for %d sentences", a.PMID, asp, len(scores[i]), len(a.Document))
		}
		// A diverged model (NaN/Inf weights) would otherwise surface only when the predictions are
		// written, as "json: unsupported value: NaN", after the whole run.
		for j, s := range scores[i] {
			if f := float64(s); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1 {
				return nil, fmt.Errorf("abstract %s, aspect %s: %w: sentence %d scored %g (want a probability in [0, 1])", a.PMID, asp, ErrBadScore, j, s)
			}
		}
	}
	out := make([]dataset.Prediction, len(a.Aspects))
	var sreqs []summarizer.Request
	var sidx []int
	for i, asp := range a.Aspects {
		pred := dataset.Prediction{PMID: a.PMID, Aspect: asp, Indexes: []int{}, Scores: scores[i]}
		var cited []string
		for j, s := range scores[i] {
			if float64(s) >= p.Threshold {
				pred.Indexes = append(pred.Indexes, j)
				cited = append(cited, a.Document[j])
			}
		}
		switch {
		case len(pred.Indexes) == 0:
			pred.Summary = dataset.UnknownSummary
		case p.Summarizer != nil:
			r := summarizer.Request{Aspect: asp, Cited: cited}
			if p.FullContext {
				r.Document = a.Document
			}
			sreqs = append(sreqs, r)
			sidx = append(sidx, i)
		}
		out[i] = pred
	}
	if len(sreqs) > 0 {
		sums, err := p.Summarizer.Summarize(sreqs, p.Decode)
		if err != nil {
			return nil, fmt.Errorf("abstract %s: %w", a.PMID, err)
		}
		for k, i := range sidx {
			raw, rawIdx := sums[k], out[i].Indexes
			var n int
			out[i].Summary, out[i].Indexes, n = p.Ground.Apply(a.Document, raw, rawIdx)
			p.grounded.Add(int64(n))
			// The model's own output stays in the prediction when grounding changed it.
			if out[i].Summary != raw {
				out[i].SummaryRaw = raw
			}
			if !slices.Equal(out[i].Indexes, rawIdx) {
				out[i].IndexesRaw = rawIdx
			}
		}
	}
	return out, nil
}

// Options are the command-level inputs of Run.
type Options struct {
	// Tracker and Summarizer are checkpoint directories; Summarizer may be empty (track-only).
	// Tracker may also be a tracker cross-validation directory (LoadEnsemble).
	// Tracker "gold" (GoldTracker) uses the input's reference citations instead of a model;
	// Summarizer "extractive" (ExtractiveSummarizer) copies the tracked sentences.
	Tracker, Summarizer string
	// Input is a prepared directory, a .jsonl/.json benchmark file, or a raw text file.
	Input string
	// Split selects the split of a prepared directory (default test).
	Split string
	// Out is the prediction JSONL path.
	Out string
	// Refs, when set and the input is annotated, receives the reference instances of the input in
	// the eval format (useful for a prepared split, whose instances are otherwise only in shards).
	Refs string
	// Method, when set, is MethodTTS (the same as empty: Track-then-Sum), MethodSTT or MethodETE
	// (the TracSum Table 6 variants, models from Model, or for stt from Summarizer and Tracker),
	// or an end-to-end LLM method (llmmethods.Methods) run instead of a tracker and a summarizer,
	// which must then be empty. CheckMethod says which combinations are accepted.
	Method string
	// Model is the checkpoint of --method stt (train --task sum_then_track) or ete (train --task
	// end_to_end).
	Model string
	// Refine, when > 0, refines every positive prediction with LongSumEval's QA feedback for at
	// most Refine rounds (see Refine).
	Refine int
	// Threshold, when > 0, is the command line's decision threshold (tracksum-serve --threshold),
	// which overrides infer.threshold and the tracker checkpoint's (see Threshold).
	Threshold float64
	// Log receives progress and the final throughput line; os.Stderr when nil.
	Log io.Writer
}

// Stats reports what Run did.
type Stats struct {
	Abstracts, Predictions int
	Elapsed                time.Duration
}

// AbstractsPerSec is the throughput of the run.
func (s Stats) AbstractsPerSec() float64 {
	return float64(s.Abstracts) / max(s.Elapsed.Seconds(), 1e-9)
}

// Run loads the models, reads the input, runs the pipeline on every abstract with
// cfg.Infer.Workers workers and writes the predictions atomically.
func Run(ctx context.Context, cfg *config.Config, o Options) (*Stats, error) {
	log := o.Log
	if log == nil {
		log = os.Stderr
	}
	if err := checkRun(cfg, o); err != nil {
		return nil, err
	}
	if o.Method == MethodTTS {
		o.Method = ""
	}
	// Open the prediction file's temporary sibling now, so that an unwritable --out fails before
	// the models are loaded rather than after the whole inference.
	out, err := startJSONL[dataset.Prediction](o.Out)
	if err != nil {
		return nil, err
	}
	defer out.abort()
	p, err := LoadPipeline(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	aspectSet := inputAspectSet(cfg, p)
	abstracts, refs, err := ReadInput(o.Input, o.Split, aspectSet, cfg.Infer.Aspects)
	if err != nil {
		return nil, err
	}
	if len(abstracts) == 0 {
		return nil, fmt.Errorf("%w: %s: no instances to run on", ErrInput, o.Input)
	}
	var lr *llmRun
	if usesLLM(o) {
		if lr, err = setupLLM(ctx, cfg, o, p, aspectSet, abstracts, log); err != nil {
			return nil, err
		}
	}
	if err := useReferences(p, o, refs); err != nil {
		return nil, err
	}
	workers := cfg.Infer.Workers
	if workers <= 0 && lr != nil {
		workers = lr.client.Concurrency()
	}
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	start := time.Now()
	results, err := RunPipeline(ctx, p, abstracts, workers, progress.NewTo(log, "infer", int64(len(abstracts)), "abstracts"))
	if err != nil {
		return nil, err
	}
	var preds []dataset.Prediction
	for _, r := range results {
		preds = append(preds, r...)
	}
	if o.Refine > 0 {
		if _, err := Refine(ctx, cfg, abstracts, preds, o.Refine, log); err != nil {
			return nil, err
		}
	}
	if err := out.commit(preds); err != nil {
		return nil, err
	}
	st := &Stats{Abstracts: len(abstracts), Predictions: len(preds), Elapsed: time.Since(start)}
	fmt.Fprintf(log, "infer: %d abstracts, %d predictions in %.1fs: %.2f abstracts/s (%d workers) -> %s\n",
		st.Abstracts, st.Predictions, st.Elapsed.Seconds(), st.AbstractsPerSec(), workers, o.Out)
	if p.Ground != nil {
		fmt.Fprintf(log, "infer: grounding %s: %d cited sentence(s) backed no claim of their summary\n", p.Ground.Mode(), p.Grounded())
	}
	p.Finish(log)
	if lr != nil {
		if err := lr.finish(st, log); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// checkRun checks o before anything is loaded or written: the models fit the method, the
// decoding overrides are valid, and no output is one of the inputs.
func checkRun(cfg *config.Config, o Options) error {
	if err := CheckMethod(o); err != nil {
		return err
	}
	if err := CheckDecoding(cfg.Infer.Decoding); err != nil {
		return err
	}
	inputs := map[string]string{"--input": o.Input, "--tracker": o.Tracker, "--summarizer": o.Summarizer, "--model": o.Model}
	if o.Tracker == GoldTracker || o.Tracker == LLMComponent {
		inputs["--tracker"] = ""
	}
	if o.Summarizer == ExtractiveSummarizer || o.Summarizer == LLMComponent {
		inputs["--summarizer"] = ""
	}
	return cli.CheckOutputs(inputs, map[string]string{"--out": o.Out, "--refs": o.Refs})
}

// inputAspectSet is the aspect set the input is read with: the loaded checkpoints', else (gold or
// LLM components, --method) prepare.aspect_set when not auto, so that --aspects OB works on PCoA
// data, else TracSum's.
func inputAspectSet(cfg *config.Config, p *Pipeline) string {
	set := p.AspectSet
	if set == "" && cfg.Prepare.AspectSet != "auto" {
		set = cfg.Prepare.AspectSet
	}
	return cmp.Or(set, dataset.AspectSetTracSum)
}

// useReferences puts the input's reference annotations refs (nil for raw text) to the uses o asks
// for: the gold tracker (p has no tracker), and --refs.
func useReferences(p *Pipeline, o Options, refs []dataset.Instance) error {
	if p.Tracker == nil && p.Predictor == nil {
		if refs == nil {
			return fmt.Errorf("--tracker gold needs annotated input, not raw text (%s)", o.Input)
		}
		p.Tracker = newGoldScores(refs)
	}
	if o.Refs == "" {
		return nil
	}
	if refs == nil {
		return fmt.Errorf("--refs: input %s has no reference annotations (raw text)", o.Input)
	}
	return writeJSONL(o.Refs, refs)
}

// LoadPipeline loads the models o names into the Pipeline that Run runs, with cfg's infer
// settings: --method stt|ete (their checkpoints), --tracker (a checkpoint, a cross-validation
// directory: the fold ensemble, or a fine-tuned pretrained model), --summarizer (a from-scratch or
// fine-tuned pretrained checkpoint, with grounding; "extractive"), and o's decoding overrides.
// Each checkpoint is opened through package open: verified once, loaded by the opener its
// backbone registered, asked for the role its flag wants.
// What it cannot load without the input is left nil for the caller: the tracker "gold", the LLM
// components and methods (Run sets them up), and a missing --tracker. Progress lines go to o.Log
// (os.Stderr when nil); o's input and output fields are not read. tracksum-serve loads its
// Track-then-Sum models through it.
func LoadPipeline(ctx context.Context, cfg *config.Config, o Options) (*Pipeline, error) {
	log := o.Log
	if log == nil {
		log = os.Stderr
	}
	if err := CheckDecoding(cfg.Infer.Decoding); err != nil {
		return nil, err
	}
	if o.Method == MethodTTS {
		o.Method = ""
	}
	p := &Pipeline{FullContext: cfg.Infer.FullContext}
	p.Threshold, _ = Threshold(o.Threshold, cfg, 0)
	var err error
	if variantMethod(o.Method) {
		vr, err := loadVariant(ctx, cfg, o, log)
		if err != nil {
			return nil, err
		}
		// Its models are loaded: nothing below may load --tracker or --summarizer (stt's parts).
		o.Tracker, o.Summarizer = "", ""
		p.Predictor, p.AspectSet, p.Tokenizer, p.finish = vr.predictor, vr.aspectSet, vr.tok, vr.finish
	}
	if o.Tracker != "" && o.Tracker != GoldTracker && o.Tracker != LLMComponent && o.Method == "" {
		// A cross-validation directory (cv.json) is the ensemble of its fold checkpoints.
		var recorded float64
		if p.Tracker, p.AspectSet, recorded, err = loadTracker(ctx, cfg, o.Tracker, log); err != nil {
			return nil, err
		}
		var from string
		p.Threshold, from = Threshold(o.Threshold, cfg, recorded)
		fmt.Fprintf(log, "infer: tracker threshold %g (%s)\n", p.Threshold, from)
	}
	aspectSet := p.AspectSet
	switch o.Summarizer {
	case "":
	case ExtractiveSummarizer:
		p.Summarizer = extractive{}
	case LLMComponent:
		// Set up with the tracker llm, once the input is read.
	default:
		if aspectSet, err = loadSummarizer(ctx, cfg, o.Summarizer, p, aspectSet, log); err != nil {
			return nil, err
		}
	}
	p.AspectSet = aspectSet
	return p, nil
}

// subwordTokens is a from-scratch model's tokenizer as a Tokenizer.
type subwordTokens struct{ t *subword.Tokenizer }

// Encode implements Tokenizer.
func (s subwordTokens) Encode(text string) []int {
	ids := s.t.Encode(text)
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// Decode implements Tokenizer.
func (s subwordTokens) Decode(ids []int) string {
	in := make([]int32, len(ids))
	for i, id := range ids {
		in[i] = int32(id)
	}
	return s.t.Decode(in)
}

// hfTokens is a pretrained model's tokenizer as a Tokenizer (no special tokens added).
type hfTokens struct{ t *tokenizer.Tokenizer }

// Encode implements Tokenizer.
func (h hfTokens) Encode(text string) []int { return h.t.Encode(text, false) }

// Decode implements Tokenizer.
func (h hfTokens) Decode(ids []int) string { return h.t.Decode(ids) }

// NewGrounder returns the Grounder of cfg's infer.grounding, with eval.lexical's support test;
// nil for "off".
func NewGrounder(cfg *config.Config) *ground.Grounder {
	if cfg.Infer.Grounding == string(ground.ModeOff) {
		return nil
	}
	return ground.New(ground.Mode(cfg.Infer.Grounding), judge.LexicalOptions{
		Threshold: cfg.Eval.Lexical.Threshold, MinClauseWords: cfg.Eval.Lexical.MinClauseWords})
}

// matchFullContext checks infer.full_context against how the summarizer in dir was trained
// (trained: with the abstract as context): --full-context needs such a summarizer, and one trained
// so is run as TTS (+) f even without the flag.
func matchFullContext(cfg *config.Config, dir string, trained bool, p *Pipeline, log io.Writer) error {
	switch {
	case cfg.Infer.FullContext && !trained:
		return fmt.Errorf("--full-context: summarizer %s was trained without the abstract as context (summarizer.full_context: false)", dir)
	case !cfg.Infer.FullContext && trained:
		fmt.Fprintf(log, "infer: summarizer %s was trained with the full abstract as context: using TTS (+) f\n", dir)
		p.FullContext = true
	}
	return nil
}

// loadSummarizer sets p's summarizer to the checkpoint dir (--summarizer), opened through its
// backbone's opener (package open), with its decoding settings and cfg's overrides, and returns
// the aspect set to read the input with (aspectSet, the tracker's, or the summarizer's). The
// decoding flags of one backbone are refused for another before it is loaded.
func loadSummarizer(ctx context.Context, cfg *config.Config, dir string, p *Pipeline, aspectSet string, log io.Writer) (string, error) {
	m, err := open.Verify(ctx, dir, "--summarizer", open.Options{Log: log}, checkpoint.KindSummarizer)
	if err != nil {
		return "", err
	}
	if m.Pretrained() {
		if err := checkPretrainedFlags(cfg.Infer.Decoding, dir); err != nil {
			return "", err
		}
	} else if t := cfg.Infer.Decoding.SampleTemperature; t != nil && *t > 0 {
		return "", fmt.Errorf("--sample-temperature applies to a pretrained summarizer (train --pretrained), not to %s", dir)
	}
	c, err := open.Load(ctx, m, open.Options{Precision: cfg.Infer.Precision})
	if err != nil {
		return "", err
	}
	s, err := open.As[Summarizer](c, "--summarizer", "a summarizer")
	if err != nil {
		return "", err
	}
	if set := c.AspectSet(); aspectSet != "" && set != "" && aspectSet != set {
		return "", fmt.Errorf("--summarizer %s has aspect set %s, the tracker %s", dir, set, aspectSet)
	}
	fullContext := false
	switch s := s.(type) {
	case *summarizer.Summarizer:
		fullContext = s.Meta.Hyperparams.FullContext
		p.Decode, p.Tokenizer = decodeOptions(s, cfg.Infer.Decoding), subwordTokens{s.Tok}
	case *pretrained.Summarizer:
		fullContext = s.Meta.FullContext
		p.Decode, p.Tokenizer = pretrainedDecode(s, cfg.Infer.Decoding), hfTokens{s.Tokenizer()}
	default:
		// Another backbone: its own decoding settings with the search overrides.
		if d, ok := s.(interface{ DecodeOptions() decode.Options }); ok {
			p.Decode = searchFlags(d.DecodeOptions(), cfg.Infer.Decoding)
		}
	}
	if err := matchFullContext(cfg, dir, fullContext, p, log); err != nil {
		return "", err
	}
	p.Summarizer = s
	p.Ground = NewGrounder(cfg)
	return cmp.Or(aspectSet, c.AspectSet()), nil
}

// checkPretrainedFlags refuses the decoding overrides of the from-scratch summarizer for dir, a
// fine-tuned pretrained model: they would be ignored.
func checkPretrainedFlags(d config.InferDecoding, dir string) error {
	if d.MinLengthRatio != nil || d.CopyChainBonus != nil || d.WordRule != nil || d.RepeatSourceNgrams != nil {
		return fmt.Errorf("--min-length-ratio, --copy-chain-bonus, --word-rule and --repeat-source-ngrams apply to the from-scratch summarizer, not to %s (a fine-tuned pretrained model)", dir)
	}
	return nil
}

// pretrainedDecode applies the sampling overrides of d (infer.decoding) to a loaded pretrained
// summarizer and returns its decoding options with d's search overrides (beam, length, length
// penalty, n-gram blocking) applied. --sample-temperature 0 searches even with a checkpoint that
// samples (summarizer.temperature, from a generation_config.json with do_sample).
func pretrainedDecode(s *pretrained.Summarizer, d config.InferDecoding) decode.Options {
	if d.SampleTemperature != nil && *d.SampleTemperature == 0 {
		s.Gen.Temperature = 0
	}
	if d.SampleTemperature != nil && *d.SampleTemperature > 0 {
		s.Gen.Temperature, s.Gen.TopP = *d.SampleTemperature, 1
		if d.TopP != nil {
			s.Gen.TopP = *d.TopP
		}
	}
	return searchFlags(s.DecodeOptions(), d)
}

// RunPipeline processes abstracts with workers goroutines and returns the predictions of each
// abstract in input order. bar, when not nil, advances per abstract.
func RunPipeline(ctx context.Context, p *Pipeline, abstracts []Abstract, workers int, bar *progress.Bar) ([][]dataset.Prediction, error) {
	results := make([][]dataset.Prediction, len(abstracts))
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				preds, err := p.Process(abstracts[i])
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					continue
				}
				results[i] = preds
				if bar != nil {
					bar.Add(1)
				}
			}
		}()
	}
feed:
	for i := range abstracts {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if bar != nil {
		bar.Finish()
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return results, nil
}

func cmpErr(prev, err error) error {
	if prev != nil {
		return prev
	}
	return err
}

// writeJSONL writes one JSON object per line, atomically, under path's lock.
func writeJSONL[T any](path string, recs []T) error {
	lock, err := atomicio.LockFile(path)
	if err != nil {
		return err
	}
	defer lock.Release()
	return atomicio.WriteJSONL(path, recs)
}

// pendingJSONL is a JSONL output whose temporary file already exists: atomicio.WriteWith runs in
// a goroutine and waits, inside its write callback, for the records (commit) or a failure (abort).
type pendingJSONL[T any] struct {
	recs chan []T
	done chan error
	sent bool
}

// startJSONL creates path's temporary file (and its directory) and returns once it exists, or
// with the error that prevented it. path must not be an existing directory.
func startJSONL[T any](path string) (*pendingJSONL[T], error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("--out %s is a directory, want a file", path)
	}
	lock, err := atomicio.LockFile(path)
	if err != nil {
		return nil, fmt.Errorf("--out %s: %w", path, err)
	}
	p := &pendingJSONL[T]{recs: make(chan []T, 1), done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		err := atomicio.WriteWith(path, 0o644, func(w io.Writer) error {
			close(ready)
			recs, ok := <-p.recs
			if !ok {
				return errAborted
			}
			return atomicio.EncodeJSONL(w, recs)
		})
		// Released before done is sent: once commit returns, another run may take the output.
		lock.Release()
		p.done <- err
	}()
	select {
	case <-ready:
		return p, nil
	case err := <-p.done:
		return nil, fmt.Errorf("--out %s: %w", path, err)
	}
}

var errAborted = errors.New("aborted")

// commit writes recs and renames the file into place.
func (p *pendingJSONL[T]) commit(recs []T) error {
	p.sent = true
	p.recs <- recs
	return <-p.done
}

// abort removes the temporary file unless commit ran; safe to defer.
func (p *pendingJSONL[T]) abort() {
	if p.sent {
		return
	}
	p.sent = true
	close(p.recs)
	<-p.done
}

// ErrInput marks an input that is none of the accepted kinds (dataset.ErrInput), or an aspect
// choice that does not fit it.
var ErrInput = dataset.ErrInput

// ReadInput reads the abstracts to process and, for annotated input, the reference instances, with
// dataset.ReadInput (which picks the reader by the path's kind). aspects restricts (or, for raw
// text, chooses) the aspects; empty means the instances' own aspects for annotated input and every
// aspect of aspectSet for raw text.
func ReadInput(path, split, aspectSet string, aspects []string) ([]Abstract, []dataset.Instance, error) {
	instances, raws, err := dataset.ReadInput(path, split)
	if err != nil {
		return nil, nil, err
	}
	if raws != nil {
		codes, err := NormalizeAspects(aspects, aspectSet)
		if err != nil {
			return nil, nil, err
		}
		if len(codes) == 0 {
			for _, a := range dataset.Aspects(aspectSet) {
				codes = append(codes, a.Code)
			}
		}
		out := make([]Abstract, len(raws))
		for i, r := range raws {
			out[i] = Abstract{PMID: r.PMID, Document: r.Document, Aspects: slices.Clone(codes)}
		}
		return out, nil, nil
	}
	codes, err := NormalizeAspects(aspects, aspectSet)
	if err != nil {
		return nil, nil, err
	}
	if len(codes) > 0 {
		instances = slices.DeleteFunc(instances, func(in dataset.Instance) bool { return !slices.Contains(codes, in.Aspect) })
		if len(instances) == 0 {
			return nil, nil, fmt.Errorf("%w: %s has no instance of the aspects %s", ErrInput, path, strings.Join(codes, ","))
		}
	}
	return groupInstances(instances), instances, nil
}

// NormalizeAspects maps aspect codes or names, in any case ("A", "aims", "Side effects"), to the
// canonical codes of set (instances carry canonical codes, so "A" would otherwise match nothing),
// dropping repeats. An unknown aspect is an ErrInput error listing the set's codes.
func NormalizeAspects(aspects []string, set string) ([]string, error) {
	var codes []string
	for _, c := range aspects {
		a, ok := dataset.LookupAspect(set, strings.TrimSpace(c))
		if !ok {
			var known []string
			for _, a := range dataset.Aspects(set) {
				known = append(known, a.Code+" ("+a.Name+")")
			}
			return nil, fmt.Errorf("%w: --aspects: unknown aspect %q for the %s aspect set; known: %s", ErrInput, c, set, strings.Join(known, ", "))
		}
		if !slices.Contains(codes, a.Code) {
			codes = append(codes, a.Code)
		}
	}
	return codes, nil
}

// groupInstances turns instances into abstracts (first-seen order) with their aspects (input
// order).
func groupInstances(instances []dataset.Instance) []Abstract {
	var out []Abstract
	at := map[string]int{}
	for _, in := range instances {
		i, ok := at[in.PMID]
		if !ok {
			i = len(out)
			at[in.PMID] = i
			out = append(out, Abstract{PMID: in.PMID, Document: in.Document})
		}
		out[i].Aspects = append(out[i].Aspects, in.Aspect)
	}
	return out
}

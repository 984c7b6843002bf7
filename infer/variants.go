package infer

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/infer/llmmethods"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/ete"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/role"
	"github.com/tracksum/tracksum/model/stt"
	"github.com/tracksum/tracksum/model/summarizer"
)

// The trainable methods of --method (TracSum Table 6): Track-then-Sum (the default, with
// --tracker and --summarizer; TTS (+) f is --full-context), SUM-THEN-TRACK and END-TO-END.
const (
	MethodTTS = "tts"
	MethodSTT = "stt"
	MethodETE = "ete"
)

// variantMethod reports whether method is SUM-THEN-TRACK or END-TO-END.
func variantMethod(method string) bool { return method == MethodSTT || method == MethodETE }

// MethodNames lists every --method value: the trainable ones, then the LLM methods.
func MethodNames() []string {
	out := []string{MethodTTS, MethodSTT, MethodETE}
	for _, m := range llmmethods.Methods {
		out = append(out, string(m))
	}
	return out
}

// CheckDecoding checks the decoding overrides d (infer.decoding), with one error naming the flag:
// NaN passes every comparison, so each float must be finite before its range is checked; a beam
// size or a length below 1 is refused (unset is the checkpoint's). How large a beam or a length
// fits is checked where the model is known (model/pretrained caps the length by its context and
// refuses a beam whose cache cannot fit in memory).
func CheckDecoding(d config.InferDecoding) error {
	for _, f := range []struct {
		flag string
		v    *float64
	}{{"length-penalty", d.LengthPenalty}, {"min-length-ratio", d.MinLengthRatio}, {"copy-chain-bonus", d.CopyChainBonus},
		{"sample-temperature", d.SampleTemperature}, {"top-p", d.TopP}} {
		if f.v != nil && (math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			return fmt.Errorf("--%s %v: want a finite number", f.flag, *f.v)
		}
	}
	switch {
	case d.SampleTemperature != nil && *d.SampleTemperature < 0:
		return fmt.Errorf("--sample-temperature %v: want 0 (search) or more", *d.SampleTemperature)
	case d.TopP != nil && (*d.TopP <= 0 || *d.TopP > 1):
		return fmt.Errorf("--top-p %v: want a number in (0, 1]", *d.TopP)
	case d.BeamSize != nil && *d.BeamSize < 1:
		return fmt.Errorf("--beam-size %d: want 1 or more", *d.BeamSize)
	case d.MaxLength != nil && *d.MaxLength < 1:
		return fmt.Errorf("--max-length %d: want 1 or more", *d.MaxLength)
	case d.MinLengthRatio != nil && *d.MinLengthRatio < 0:
		return fmt.Errorf("--min-length-ratio %v: want 0 or more", *d.MinLengthRatio)
	case d.NoRepeatNgram != nil && *d.NoRepeatNgram < 0:
		return fmt.Errorf("--no-repeat-ngram %d: want 0 (off) or more", *d.NoRepeatNgram)
	}
	return nil
}

// CheckMethod checks that the models named in o fit its method, with one error saying what to
// give instead:
//
//	(none) | tts  --tracker T [--summarizer S]           Track-then-Sum
//	stt           --model STT  |  --summarizer S --tracker T (the parts of SUM-THEN-TRACK checkpoints)
//	ete           --model ETE
//	LLM methods   none of --tracker, --summarizer, --model
func CheckMethod(o Options) error {
	models := o.Tracker != "" || o.Summarizer != ""
	switch o.Method {
	case "", MethodTTS:
		if o.Model != "" {
			return fmt.Errorf("--model is the checkpoint of --method stt or ete; Track-then-Sum takes --tracker and --summarizer")
		}
		if o.Tracker == "" {
			return fmt.Errorf("Track-then-Sum needs --tracker (or another --method: %v)", MethodNames())
		}
	case MethodSTT:
		switch {
		case o.Model != "" && models:
			return fmt.Errorf("--method stt: give --model STT_DIR, or --summarizer and --tracker (its parts), not both")
		case o.Model == "" && (o.Tracker == "" || o.Summarizer == ""):
			return fmt.Errorf("--method stt needs --model STT_DIR (train --task sum_then_track), or both --summarizer STT_DIR/summarizer and --tracker STT_DIR/tracker")
		}
		for _, c := range []string{o.Tracker, o.Summarizer} {
			if c == GoldTracker || c == LLMComponent || c == ExtractiveSummarizer {
				return fmt.Errorf("--method stt takes checkpoint directories, not %q", c)
			}
		}
	case MethodETE:
		if o.Model == "" || models {
			return fmt.Errorf("--method ete needs --model ETE_DIR (train --task end_to_end) and neither --tracker nor --summarizer")
		}
	default:
		if _, err := llmmethods.ParseMethod(o.Method); err != nil {
			return fmt.Errorf("--method: unknown method %q (want one of %v)", o.Method, MethodNames())
		}
		if models || o.Model != "" {
			return fmt.Errorf("--method %s replaces the tracker and the summarizer: leave out --tracker, --summarizer and --model", o.Method)
		}
	}
	return nil
}

// variantRun is a loaded SUM-THEN-TRACK or END-TO-END model plugged into a Pipeline.
type variantRun struct {
	predictor Predictor
	aspectSet string
	// finish prints what the run repaired (END-TO-END's output parsing).
	finish func(log io.Writer)
	// tok is the tokenizer of the model writing the summaries (Pipeline.Tokenizer).
	tok Tokenizer
}

// predictFunc adapts a variant's Predict to Predictor.
type predictFunc func(pmid string, doc, aspects []string) ([]dataset.Prediction, error)

// Predict implements Predictor.
func (f predictFunc) Predict(a Abstract) ([]dataset.Prediction, error) {
	return f(a.PMID, a.Document, a.Aspects)
}

// variantParts are the parts of --method stt|ete as one backbone loaded them, with infer's
// decoding flags applied: a summarizer and a pair tracker (SUM-THEN-TRACK) or an answerer
// (END-TO-END).
type variantParts struct {
	summarizer role.Summarizer
	pairs      role.PairTracker
	answerer   role.Answerer
	decode     decode.Options
	aspectSet  string
	tok        Tokenizer
	// threshold is the pair tracker's recorded decision threshold (0: none; see Threshold).
	threshold float64
}

// loadVariant loads the model of --method stt|ete with infer's settings: the decoding flags and,
// for SUM-THEN-TRACK, the pair tracker's threshold as Threshold resolves it. The checkpoints are
// verified (openVariant) and loaded by their backbones' openers (package open): the from-scratch
// models (model/stt, model/ete), fine-tuned pretrained LMs (model/pretrained), or any registered
// backbone; the variant is composed over the parts they implement (package role).
func loadVariant(ctx context.Context, cfg *config.Config, o Options, log io.Writer) (*variantRun, error) {
	if cfg.Infer.FullContext {
		return nil, fmt.Errorf("--full-context is TTS (+) f, a Track-then-Sum summarizer's input: not with --method %s", o.Method)
	}
	mans, err := openVariant(ctx, o, log)
	if err != nil {
		return nil, err
	}
	if mans[0].Pretrained() {
		if err := checkPretrainedFlags(cfg.Infer.Decoding, cmp.Or(o.Model, o.Summarizer)); err != nil {
			return nil, err
		}
	}
	cs := make([]*open.Checkpoint, len(mans))
	for i, m := range mans {
		if cs[i], err = open.Load(ctx, m, open.Options{Precision: cfg.Infer.Precision}); err != nil {
			return nil, err
		}
	}
	var p *variantParts
	if o.Method == MethodETE {
		p, err = answererOf(cs[0], cfg.Infer.Decoding, log)
	} else {
		p, err = sumThenTrackOf(cs, cfg.Infer.Decoding, log)
	}
	if err != nil {
		return nil, err
	}
	run := &variantRun{aspectSet: p.aspectSet, tok: p.tok}
	if o.Method == MethodETE {
		m := &role.EndToEnd[role.Answerer]{S: p.answerer, Decode: p.decode}
		run.predictor = predictFunc(m.Predict)
		run.finish = func(log io.Writer) { fmt.Fprintf(log, "infer: end_to_end output parsing: %s\n", m.Stats()) }
		return run, nil
	}
	th, from := Threshold(o.Threshold, cfg, cmp.Or(mans[0].Settings.Threshold, p.threshold))
	fmt.Fprintf(log, "infer: pair tracker threshold %g (%s)\n", th, from)
	m := &role.SumThenTrack[role.Summarizer, role.PairTracker]{Summarizer: p.summarizer, Tracker: p.pairs, Decode: p.decode, Threshold: th}
	run.predictor = predictFunc(m.Predict)
	return run, nil
}

// answererOf returns the answerer of the END-TO-END checkpoint c (--model) with the decoding
// overrides d.
func answererOf(c *open.Checkpoint, d config.InferDecoding, log io.Writer) (*variantParts, error) {
	switch m := c.Model.(type) {
	case *ete.Model:
		return &variantParts{answerer: m.S, decode: decodeOptions(m.S.Summarizer, d), aspectSet: m.Meta.AspectSet, tok: subwordTokens{m.S.Tok}}, nil
	case *pretrained.EndToEnd:
		fmt.Fprintf(log, "infer: end_to_end: %s fine-tuned from %s\n", c.Dir, m.S.Meta.ModelType)
		return &variantParts{answerer: m.S, decode: pretrainedDecode(m.S, d), aspectSet: m.Meta.AspectSet, tok: hfTokens{m.S.Tokenizer()}}, nil
	}
	a, err := open.As[role.Answerer](c, "--model", "an end_to_end model")
	if err != nil {
		return nil, err
	}
	p := &variantParts{answerer: a, aspectSet: c.AspectSet()}
	p.decode, p.tok = summarizerSettings(a, d)
	return p, nil
}

// sumThenTrackOf returns the parts of SUM-THEN-TRACK from its checkpoints cs: the directory of
// both (--model), or its summarizer part and its tracker part (--summarizer, --tracker), which
// must have been trained on one aspect set with one tokenizer. The summarizer's decoding takes the
// overrides d.
func sumThenTrackOf(cs []*open.Checkpoint, d config.InferDecoding, log io.Writer) (*variantParts, error) {
	var s role.Summarizer
	var t role.PairTracker
	var threshold float64
	aspectSet := cs[0].AspectSet()
	switch m := cs[0].Model.(type) {
	case *stt.Model:
		s, t, threshold = m.Summarizer, m.Tracker, m.Threshold
	case *pretrained.SumThenTrack:
		s, t = m.Summarizer, m.Tracker
	default:
		var err error
		if s, err = open.As[role.Summarizer](cs[0], "--summarizer", "the summarizer part of a sum_then_track"); err != nil {
			return nil, err
		}
		if len(cs) < 2 {
			return nil, cs[0].Refuse("--model", "a sum_then_track directory")
		}
		if t, err = open.As[role.PairTracker](cs[1], "--tracker", "the tracker part of a sum_then_track"); err != nil {
			return nil, err
		}
		if err := sameParts(cs[0], cs[1]); err != nil {
			return nil, err
		}
		threshold = cs[1].Threshold()
	}
	if pt, ok := t.(*pretrained.Tracker); ok {
		if ps, ok := s.(*pretrained.Summarizer); ok {
			fmt.Fprintf(log, "infer: sum_then_track: summarizer and pair tracker (head %s) fine-tuned from %s\n", pt.Meta.Head, ps.Meta.ModelType)
		}
	}
	p := &variantParts{summarizer: s, pairs: t, aspectSet: aspectSet, threshold: threshold}
	p.decode, p.tok = summarizerSettings(s, d)
	return p, nil
}

// sameParts checks that the two parts of SUM-THEN-TRACK given apart (--summarizer, --tracker)
// were trained on one aspect set with one tokenizer (the sha256 of tokenizer.json their manifests
// record, when both hold one).
func sameParts(s, t *open.Checkpoint) error {
	if a, b := s.AspectSet(), t.AspectSet(); a != "" && b != "" && a != b {
		return fmt.Errorf("%w: %s (aspect set %s) and %s (aspect set %s) were trained on different aspect sets", checkpoint.ErrCheckpoint, s.Dir, a, t.Dir, b)
	}
	if a, b := fileSum(s.Manifest, checkpoint.TokenizerFile), fileSum(t.Manifest, checkpoint.TokenizerFile); a != "" && b != "" && a != b {
		return fmt.Errorf("%w: %s and %s were trained with different tokenizers", checkpoint.ErrCheckpoint, s.Dir, t.Dir)
	}
	return nil
}

// fileSum returns the sha256 m records for its file path, "" when it lists none.
func fileSum(m *checkpoint.Manifest, path string) string {
	for _, f := range m.Files {
		if f.Path == path {
			return f.SHA256
		}
	}
	return ""
}

// summarizerSettings returns the decoding options of the summarizer s (role.Summarizer or
// role.Answerer: its checkpoint's, with the overrides d applied) and its tokenizer (nil when it
// has none infer knows).
func summarizerSettings(s any, d config.InferDecoding) (decode.Options, Tokenizer) {
	switch s := s.(type) {
	case *summarizer.Summarizer:
		return decodeOptions(s, d), subwordTokens{s.Tok}
	case ete.Answerer:
		return decodeOptions(s.Summarizer, d), subwordTokens{s.Tok}
	case *pretrained.Summarizer:
		return pretrainedDecode(s, d), hfTokens{s.Tokenizer()}
	}
	// Another backbone: its own decoding settings with the search overrides.
	var o decode.Options
	if ds, ok := s.(interface{ DecodeOptions() decode.Options }); ok {
		o = ds.DecodeOptions()
	}
	return searchFlags(o, d), nil
}

// openVariant verifies the checkpoints of --method stt|ete (open.Verify): --model's, or
// for SUM-THEN-TRACK its parts --summarizer's and --tracker's, each of the right kind and part. It
// returns their manifests: --model's, or the summarizer part's and the tracker part's.
func openVariant(ctx context.Context, o Options, log io.Writer) ([]*checkpoint.Manifest, error) {
	if o.Method == MethodETE {
		m, err := open.Verify(ctx, o.Model, "--model", open.Options{Log: log}, checkpoint.KindEndToEnd)
		return []*checkpoint.Manifest{m}, err
	}
	if o.Model != "" {
		m, err := open.Verify(ctx, o.Model, "--model", open.Options{Log: log}, checkpoint.KindSumThenTrack)
		if err == nil && m.Part != "" {
			err = m.Refuse("--model", "the sum_then_track directory holding it ("+filepath.Dir(filepath.Clean(o.Model))+")")
		}
		return []*checkpoint.Manifest{m}, err
	}
	var out []*checkpoint.Manifest
	for _, c := range []struct{ flag, dir, part string }{
		{"--summarizer", o.Summarizer, checkpoint.VariantSummarizerDir}, {"--tracker", o.Tracker, checkpoint.VariantTrackerDir}} {
		m, err := open.Verify(ctx, c.dir, c.flag, open.Options{Log: log}, checkpoint.KindSumThenTrack)
		if err != nil {
			return nil, err
		}
		if m.Part != c.part {
			return nil, m.Refuse("--method stt "+c.flag, "the "+c.part+" part of a sum_then_track ("+filepath.Join("STT_DIR", c.part)+")")
		}
		out = append(out, m)
	}
	return out, nil
}

// decodeOptions applies the decoding overrides d (infer.decoding) to a loaded summarizer (the
// settings stored in its checkpoint: minimum length, copy chain bonus, word rule) and returns its
// decoding options with d's search overrides (beam, length, length penalty, n-gram blocking)
// applied.
func decodeOptions(s *summarizer.Summarizer, d config.InferDecoding) decode.Options {
	if d.MinLengthRatio != nil {
		s.Meta.MinLenRatio = *d.MinLengthRatio
	}
	if d.CopyChainBonus != nil {
		s.Meta.CopyChainBonus = *d.CopyChainBonus
		s.Net.ChainBonus = float32(*d.CopyChainBonus)
	}
	if d.WordRule != nil {
		s.SetWordRule(*d.WordRule)
	}
	if d.RepeatSourceNgrams != nil {
		s.Meta.RepeatSourceNgrams = *d.RepeatSourceNgrams
	}
	// As for Track-then-Sum's summarizer: past the training cap the decoder reuses its last trained
	// position (summarizer.Meta.MaxDecodeLen), so --max-length is not capped there.
	return searchFlags(s.DecodeOptions(), d)
}

// searchFlags returns o with the search overrides of d that are set (beam, length, length
// penalty, n-gram blocking) in place of its own.
func searchFlags(o decode.Options, d config.InferDecoding) decode.Options {
	if d.BeamSize != nil {
		o.BeamSize = *d.BeamSize
	}
	if d.MaxLength != nil {
		o.MaxLen = *d.MaxLength
	}
	if d.LengthPenalty != nil {
		o.LengthPenalty = *d.LengthPenalty
	}
	if d.NoRepeatNgram != nil {
		o.NoRepeatNgram = *d.NoRepeatNgram
	}
	return o
}

// llmMethod reports whether method is one of the LLM methods (infer/llmmethods).
func llmMethod(method string) bool {
	return slices.Contains(llmmethods.Methods, llmmethods.Method(method))
}

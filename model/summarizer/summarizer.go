// Package summarizer is tracksum's abstractive summarizer: a small encoder-decoder transformer with
// a pointer-generator copy mechanism, so that numbers, doses and drug names can be copied from the
// tracked sentences even when they are rare in training. Its input is an aspect plus the sentences
// the tracker kept (and, in the full-context variant, the whole abstract after a [CTX] marker with
// its own segment embedding); its output is the aspect summary.
//
// Training (Train) builds the network as a GoMLX graph and runs it through the shared loop of
// model/training; inference (Load, Summarizer.Summarize) runs the same network, encoder once and
// one decoder step per token with a KV cache, through its GoMLX graphs on an XLA backend (a GPU
// included) or in plain Go on the pure-Go backend, driven by package model/decode (greedy or beam).
//
// # Example
//
//	s, err := summarizer.Load("checkpoints/summ")
//	if err != nil {
//		return err
//	}
//	out, err := s.Summarize([]summarizer.Request{{Aspect: "m", Cited: sentences}}, s.DecodeOptions())
package summarizer

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/tensorio"
	tsmodel "github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/subword"
)

// formatVersion is the version of summarizer.json (checkpoint.SummarizerFile) this build writes
// and reads; the checkpoint's other files are named by package checkpoint.
const formatVersion = 1

// ErrCheckpoint marks a directory that is not a trained summarizer checkpoint. It wraps
// checkpoint.ErrCheckpoint, the one sentinel of every kind of checkpoint, as each model's
// ErrCheckpoint does (tracker, pretrained, variant).
var ErrCheckpoint = fmt.Errorf("not a summarizer %w", checkpoint.ErrCheckpoint)

// Meta is summarizer.json: what inference needs besides the weights and the tokenizer.
type Meta struct {
	FormatVersion int         `json:"format_version"`
	Hyperparams   Hyperparams `json:"hyper"`
	AspectSet     string      `json:"aspect_set"`
	// Decoding defaults, from the training config.
	BeamSize      int     `json:"beam_size"`
	LengthPenalty float64 `json:"length_penalty"`
	NoRepeatNgram int     `json:"no_repeat_ngram"`
	// RepeatSourceNgrams lets an n-gram the source holds c times occur c times in the summary
	// (decode.Options.Sources): copying a results sentence must not be blocked by an n-gram
	// ("; 95 % CI ,") that an earlier one already had.
	RepeatSourceNgrams bool `json:"repeat_source_ngrams,omitempty"`
	// MinLenRatio > 0 forbids [EOS] before ratio x (tokens of the tracked sentences) generated
	// tokens (at most max_summary_len-1): the from-scratch model stops far too early on long
	// inputs, and TracSum's references are about half as long as their cited sentences.
	MinLenRatio float64 `json:"min_len_ratio,omitempty"`
	// MaxDecodeLen raises the decoding length limit (tokens, [EOS] included) above max_summary_len,
	// the training cap (never below it: 0 or less = the cap). The decoder's positions beyond the
	// last trained one reuse it (Net.Step), so that summaries of long tracked sentences are not cut
	// off at the cap.
	MaxDecodeLen int `json:"max_decode_len,omitempty"`
	// CopyChainBonus is the Net's ChainBonus at inference (0 = off).
	CopyChainBonus float64 `json:"copy_chain_bonus,omitempty"`
	// CopyStartBonus is the Net's StartBonus at inference (0 = off).
	CopyStartBonus float64 `json:"copy_start_bonus,omitempty"`
	// WordRule turns on the Net's WordRule at inference; KnownWords are the multi-piece words of
	// the training summaries it admits besides the source's.
	WordRule   bool      `json:"word_rule,omitempty"`
	KnownWords [][]int32 `json:"known_words,omitempty"`
}

// Summarizer is a loaded checkpoint, ready to summarize. It is safe for concurrent use.
type Summarizer struct {
	Meta Meta
	Net  *Net
	Tok  *subword.Tokenizer
}

// Request is one summary to write: an aspect code and its tracked sentences, plus the whole
// abstract for a full-context model (ignored otherwise).
type Request struct {
	Aspect   string
	Cited    []string
	Document []string
}

// Load reads a checkpoint directory written by Train; the network decodes through its GoMLX
// graphs on tsmodel.DecodingBackend (the pure-Go backend, or an XLA device).
func Load(dir string) (*Summarizer, error) { return load(dir, checkpoint.DirFiles(dir)) }

// load is Load of the checkpoint dir whose metadata and tokenizer r reads (an opened manifest:
// the bytes it verified, not read again).
func load(dir string, r checkpoint.Reader) (*Summarizer, error) {
	metaPath := filepath.Join(dir, checkpoint.SummarizerFile)
	var m Meta
	var pathErr *os.PathError
	b, err := r.ReadFile(checkpoint.SummarizerFile)
	if err == nil {
		err = atomicio.DecodeJSON(metaPath, b, &m, false)
	}
	if errors.As(err, &pathErr) {
		return nil, fmt.Errorf("%w: %s: %w", ErrCheckpoint, dir, err)
	} else if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if m.FormatVersion != formatVersion {
		return nil, fmt.Errorf("%w: %s: format version %d, this build reads %d", ErrCheckpoint, metaPath, m.FormatVersion, formatVersion)
	}
	if err := m.Hyperparams.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCheckpoint, metaPath, err)
	}
	tokPath := filepath.Join(dir, checkpoint.TokenizerFile)
	tokBytes, err := r.ReadFile(checkpoint.TokenizerFile)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer: %w", err)
	}
	tok, err := subword.Parse(tokPath, tokBytes)
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() != m.Hyperparams.VocabSize {
		return nil, fmt.Errorf("%w: %s: tokenizer has %d ids, model %d", ErrCheckpoint, dir, tok.VocabSize(), m.Hyperparams.VocabSize)
	}
	weights := checkpoint.BestWeights(dir)
	ts, err := tensorio.ReadTensors(weights)
	if err != nil {
		return nil, fmt.Errorf("summarizer %s: %w", dir, err)
	}
	backend, err := tsmodel.DecodingBackend()
	if err != nil {
		return nil, err
	}
	net, err := NewNet(backend, m.Hyperparams, modelVars(ts))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", weights, err)
	}
	net.Suppress(suppressed(tok.NumSpecial(), m.Hyperparams.EosID))
	net.ChainBonus = float32(m.CopyChainBonus)
	net.StartBonus = float32(m.CopyStartBonus)
	net.LabelLen = LabelLen(tok.Decode)
	net.UTF8 = tok.NewUTF8Guard()
	s := &Summarizer{Meta: m, Net: net, Tok: tok}
	s.SetWordRule(m.WordRule)
	return s, nil
}

// SetWordRule turns the decoding word rule (WordRule) on or off.
func (s *Summarizer) SetWordRule(on bool) {
	s.Meta.WordRule = on
	s.Net.Words = nil
	if on {
		s.Net.Words = NewWordRule(s.Tok, s.Meta.KnownWords)
	}
}

// modelVars keeps the model-scope variables, keyed relative to the scope.
func modelVars(ts map[string]*tensors.Tensor) map[string]*tensors.Tensor {
	out := map[string]*tensors.Tensor{}
	for name, t := range ts {
		if rel, ok := strings.CutPrefix(name, tsmodel.ModelScope+"/"); ok {
			out[rel] = t
		}
	}
	return out
}

// suppressed lists the special ids a summary never contains: all of them but [EOS].
func suppressed(numSpecial int, eos int32) []int32 {
	var out []int32
	for id := range int32(numSpecial) {
		if id != eos {
			out = append(out, id)
		}
	}
	return out
}

// DecodeOptions returns the checkpoint's decoding defaults.
func (s *Summarizer) DecodeOptions() decode.Options {
	return decode.Options{
		BeamSize:      s.Meta.BeamSize,
		MaxLen:        s.Meta.MaxLen(),
		MinLen:        1, // an empty summary is never right: a negative is "Unknown.", decided by the tracker
		LengthPenalty: s.Meta.LengthPenalty,
		NoRepeatNgram: s.Meta.NoRepeatNgram,
		BOS:           s.Meta.Hyperparams.BosID,
		EOS:           s.Meta.Hyperparams.EosID,
	}
}

// Identity is what a summarizer checkpoint states when it is sealed (checkpoint.Seal): a
// from-scratch summarizer, its aspect set and the decoding it was trained with.
func (s *Summarizer) Identity() checkpoint.Identity {
	o := s.DecodeOptions()
	return checkpoint.Identity{Kind: checkpoint.KindSummarizer, Task: checkpoint.KindSummarizer,
		Backbone: checkpoint.Backbone{Type: checkpoint.BackboneScratch},
		Settings: checkpoint.Settings{AspectSet: s.Meta.AspectSet, Decoding: &checkpoint.Decoding{
			BeamSize: o.BeamSize, MaxLen: o.MaxLen, LengthPenalty: o.LengthPenalty, NoRepeatNgram: o.NoRepeatNgram}}}
}

// MaxLen is the decoding length limit: the larger of MaxDecodeLen and the training cap
// max_summary_len (a model trained with a larger cap, e.g. END-TO-END's, keeps it).
func (m Meta) MaxLen() int { return max(m.MaxDecodeLen, m.Hyperparams.MaxSummaryLen) }

// Summarize writes one summary per request, decoding them together (batched).
func (s *Summarizer) Summarize(reqs []Request, o decode.Options) (_ []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			be, ok := r.(backendError)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("summarize: %w", be.err)
		}
	}()
	states := make([]*DecState, len(reqs))
	srcIDs, segs, aspects := make([][]int32, len(reqs)), make([][]int32, len(reqs)), make([]int32, len(reqs))
	var minLens []int
	if s.Meta.MinLenRatio > 0 && o.MinLens == nil {
		minLens = make([]int, len(reqs))
	}
	var sources [][]int32
	if s.Meta.RepeatSourceNgrams && o.Sources == nil {
		sources = make([][]int32, len(reqs))
	}
	for i, r := range reqs {
		a, ok := dataset.LookupAspect(s.Meta.AspectSet, r.Aspect)
		if !ok {
			return nil, fmt.Errorf("summarize: unknown aspect %q (aspect set %s)", r.Aspect, s.Meta.AspectSet)
		}
		var doc [][]int32
		if s.Meta.Hyperparams.FullContext {
			doc = s.encodeAll(r.Document)
		}
		cited := s.encodeAll(r.Cited)
		if minLens != nil {
			n := 0
			for _, c := range cited {
				n += len(c)
			}
			minLens[i] = MinLenFor(n, s.Meta.MinLenRatio, o.MaxLen, o.MinLen)
		}
		ids, seg := BuildSource(s.Meta.Hyperparams, s.Tok.Encode(aspectText(a.Name, a.Description)), cited, doc)
		if sources != nil {
			sources[i] = ids
		}
		srcIDs[i], segs[i], aspects[i] = ids, seg, aspectIndex(s.Meta.AspectSet, r.Aspect)
	}
	for i, src := range s.Net.EncodeAll(srcIDs, segs, aspects) {
		states[i] = s.Net.NewState(src)
	}
	if minLens != nil {
		o.MinLens = minLens
	}
	if sources != nil {
		o.Sources = sources
	}
	hyps := decode.Search(s.Net, states, o)
	out := make([]string, len(hyps))
	for i, h := range hyps {
		out[i] = strings.TrimSpace(s.Tok.Decode(h.Tokens))
		if len(h.Tokens) >= o.MaxLen { // no [EOS]: cut at the length limit
			out[i] = CutAtWord(out[i])
		}
	}
	return out, nil
}

// CutAtWord ends text, a summary that decoding cut at its length limit, at the last word it
// surely completed. The limit falls between subword tokens, so the last word may be a first
// piece ("N" of "No"), which grounding and the judges would read as a word and end as a
// sentence. A text ending in punctuation ended a word there; a text of one word is kept.
func CutAtWord(text string) string {
	text = strings.TrimSpace(text)
	if text == "" || strings.ContainsRune(".!?;:)]\"'", rune(text[len(text)-1])) {
		return text
	}
	i := strings.LastIndexFunc(text, unicode.IsSpace)
	if i < 0 {
		return text
	}
	return strings.TrimRight(text[:i], ",;: \t\n")
}

// aspectIndex is the position of code in its aspect set (the row of the decoder's aspect vector).
func aspectIndex(set, code string) int32 {
	for i, a := range dataset.Aspects(set) {
		if a.Code == code {
			return int32(i)
		}
	}
	return -1
}

// LabelLen returns, for Net.LabelLen, a function giving the number of leading tokens of a
// sentence that spell its section label (0 when it has none, or when the label does not end on a
// token boundary); detok turns ids into text.
func LabelLen(detok func([]int32) string) func([]int32) int {
	return func(sent []int32) int {
		head := detok(sent[:min(len(sent), 16)])
		m := dataset.SectionLabel.FindString(strings.TrimSpace(head))
		if m == "" {
			return 0
		}
		label := strings.TrimSpace(m)
		for k := 1; k <= min(len(sent), 16); k++ {
			if got := strings.TrimSpace(detok(sent[:k])); got == label {
				return k
			} else if len(got) > len(label) {
				break
			}
		}
		return 0
	}
}

// MinLenFor is the minimum summary length for a source whose tracked sentences have citedTokens
// tokens: ratio x citedTokens rounded, at least floor and at most maxLen-1 (room for [EOS]).
func MinLenFor(citedTokens int, ratio float64, maxLen, floor int) int {
	n := max(int(math.Round(ratio*float64(citedTokens))), floor)
	if maxLen > 0 {
		n = min(n, maxLen-1)
	}
	return n
}

func (s *Summarizer) encodeAll(sents []string) [][]int32 {
	out := make([][]int32, len(sents))
	for i, t := range sents {
		out[i] = s.Tok.Encode(t)
	}
	return out
}

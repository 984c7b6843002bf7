package serve

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
)

// Completion is a backend's answer to one chat request.
type Completion struct {
	// Content is the assistant message.
	Content string
	// PromptTokens and CompletionTokens are counted with the model's tokenizer.
	PromptTokens, CompletionTokens int
	// Truncated is set when the answer stopped at the token limit (finish_reason "length").
	Truncated bool
}

// Params are the request settings a backend honours.
type Params struct {
	// MaxTokens bounds the answer's tokens (0: the backend's limit).
	MaxTokens int
	// Temperature, TopP and Seed are the request's sampling settings (nil when absent); Chat
	// honours them, TrackSum decodes as its checkpoints say.
	Temperature, TopP *float64
	Seed              *int64
	// Stop are the request's stop strings; the server cuts every answer before the first, and
	// Chat also counts the answer's tokens up to there.
	Stop []string
}

// Backend answers chat requests. Implementations must be safe for concurrent use.
type Backend interface {
	// Complete answers the conversation. It may ignore ctx once the model runs (decoding is not
	// interruptible); the server bounds the wait for it.
	Complete(ctx context.Context, messages []Message, p Params) (Completion, error)
}

// describedBackend is a Backend that says which mode it serves and how many requests it answers
// at once (0: as many as the server's workers), so that the server's "listening" line reports
// the concurrency clients really get rather than --workers alone.
type describedBackend interface {
	Backend
	Mode() string
	Concurrency() int
}

// Mode implements describedBackend.
func (t *TrackSum) Mode() string { return ModeTrackSum }

// Concurrency implements describedBackend: Track-then-Sum answers up to --workers requests at once.
func (t *TrackSum) Concurrency() int { return 0 }

// TrackSum serves Track-then-Sum (or a Table 6 variant) behind the prompt convention of
// docs/serve.md (see ParseTask and Complete): the models are infer's Pipeline, loaded by
// infer.LoadPipeline as tracksum-infer loads them.
type TrackSum struct {
	// Pipeline holds the models and their settings (threshold, decoding, grounding). Without a
	// tracker checkpoint its Tracker keeps every numbered sentence.
	Pipeline *infer.Pipeline
	// DefaultAspect is the aspect code used when a message names none.
	DefaultAspect string
	// tok counts answers (the summary writer's tokenizer, or words without one).
	tok counter
}

// TrackSumOptions choose the models of a TrackSum backend.
type TrackSumOptions struct {
	// Models names the checkpoints as tracksum-infer's flags do: Summarizer (a from-scratch or
	// fine-tuned pretrained checkpoint, or "extractive"), Tracker (a checkpoint or a
	// cross-validation directory; empty: every numbered sentence is cited), Method MethodSTT or
	// MethodETE with Model (or stt's parts), and the decoding overrides. Input and output fields
	// are not read; gold and LLM components are refused.
	Models infer.Options
	// DefaultAspect is the aspect of a message that names none (code or name; empty: the first
	// of the checkpoints' aspect set).
	DefaultAspect string
	// Threshold, when > 0, is the tracker's decision threshold (--threshold); otherwise
	// infer.threshold when set, else the tracker checkpoint's, else 0.5: infer.Threshold, the rule
	// tracksum-infer follows too.
	Threshold float64
	// Log receives the loaders' progress lines when Models.Log is nil (os.Stderr when both are).
	Log io.Writer
}

// LoadTrackSum loads the checkpoints with the built-in config: summarizerDir is required,
// trackerDir may be empty. defaultAspect may be empty (the first aspect of the checkpoints'
// aspect set). See LoadTrackSumWith.
func LoadTrackSum(summarizerDir, trackerDir, defaultAspect string) (*TrackSum, error) {
	cfg := config.Default()
	return LoadTrackSumWith(context.Background(), &cfg, TrackSumOptions{
		Models: infer.Options{Summarizer: summarizerDir, Tracker: trackerDir}, DefaultAspect: defaultAspect, Log: io.Discard})
}

// LoadTrackSumWith loads the models of o through infer.LoadPipeline, with cfg's infer settings
// (grounding, precision, full context).
func LoadTrackSumWith(ctx context.Context, cfg *config.Config, o TrackSumOptions) (*TrackSum, error) {
	m := o.Models
	switch {
	case m.Method != "" && m.Method != infer.MethodTTS && m.Method != infer.MethodSTT && m.Method != infer.MethodETE:
		return nil, fmt.Errorf("--method %s: tracksum-serve serves %s, %s or %s (an LLM method would ask an endpoint, such as this one)",
			m.Method, infer.MethodTTS, infer.MethodSTT, infer.MethodETE)
	case m.Tracker == infer.GoldTracker || m.Tracker == infer.LLMComponent || m.Summarizer == infer.LLMComponent:
		return nil, fmt.Errorf("tracksum-serve needs checkpoints: the tracker %q and the summarizer %q are not served", infer.GoldTracker, infer.LLMComponent)
	case (m.Method == "" || m.Method == infer.MethodTTS) && m.Summarizer == "":
		return nil, fmt.Errorf("--summarizer is required (or --method %s|%s with --model)", infer.MethodSTT, infer.MethodETE)
	case (m.Method == "" || m.Method == infer.MethodTTS) && m.Model != "":
		return nil, fmt.Errorf("--model is the checkpoint of --method %s|%s, or the model of --mode chat", infer.MethodSTT, infer.MethodETE)
	}
	if m.Method == infer.MethodSTT || m.Method == infer.MethodETE {
		if err := infer.CheckMethod(m); err != nil {
			return nil, err
		}
	}
	if m.Log == nil {
		m.Log = o.Log
	}
	m.Threshold = o.Threshold
	p, err := infer.LoadPipeline(ctx, cfg, m)
	if err != nil {
		return nil, err
	}
	if p.Tracker == nil && p.Predictor == nil {
		p.Tracker = everySentence{}
	}
	p.AspectSet = cmp.Or(p.AspectSet, dataset.AspectSetTracSum)
	ts := &TrackSum{Pipeline: p, tok: counter{p.Tokenizer}}
	set := p.AspectSet
	if o.DefaultAspect == "" {
		ts.DefaultAspect = dataset.Aspects(set)[0].Code
	} else {
		a, ok := dataset.LookupAspect(set, o.DefaultAspect)
		if !ok {
			return nil, fmt.Errorf("--default-aspect: unknown aspect %q for aspect set %s", o.DefaultAspect, set)
		}
		ts.DefaultAspect = a.Code
	}
	return ts, nil
}

// everySentence is the tracker of a server without one: every numbered sentence is cited.
type everySentence struct{}

// ScoreBatch implements infer.Tracker.
func (everySentence) ScoreBatch(reqs []tracker.Request) ([][]float32, error) {
	out := make([][]float32, len(reqs))
	for i, r := range reqs {
		out[i] = make([]float32, len(r.Doc))
		for j := range out[i] {
			out[i][j] = 1
		}
	}
	return out, nil
}

// counter counts and cuts answers in a model's tokens, or in words (each run of non-space
// characters with the spaces before it) where no model tokenizer exists (the extractive
// summarizer).
type counter struct{ tok infer.Tokenizer }

// count returns the number of tokens of text.
func (c counter) count(text string) int {
	if c.tok == nil {
		return len(splitWords(text))
	}
	return len(c.tok.Encode(text))
}

// cut returns the first n tokens of text (all of it when it has no more) and whether it cut.
func (c counter) cut(text string, n int) (string, bool) {
	if c.tok == nil {
		words := splitWords(text)
		if len(words) <= n {
			return text, false
		}
		return strings.Join(words[:n], ""), true
	}
	ids := c.tok.Encode(text)
	if len(ids) <= n {
		return text, false
	}
	return strings.ToValidUTF8(c.tok.Decode(ids[:n]), ""), true
}

// lengthWatch is a request's summarizer: it records whether a summary reached the decoding's
// token cap (finish_reason "length"), measured before grounding appends anything to it.
type lengthWatch struct {
	infer.Summarizer
	tok counter
	hit bool
}

// Summarize implements infer.Summarizer.
func (l *lengthWatch) Summarize(reqs []summarizer.Request, o decode.Options) ([]string, error) {
	out, err := l.Summarizer.Summarize(reqs, o)
	for _, s := range out {
		if o.MaxLen > 0 && l.tok.count(s) >= o.MaxLen {
			l.hit = true
		}
	}
	return out, err
}

// Unknown is the answer's summary when no sentence is relevant (TracSum's negative).
const Unknown = dataset.UnknownSummary

// Complete implements Backend. The last user message is read with ParseTask:
//   - with numbered sentences, it runs the Pipeline (Track-then-Sum with grounding, or the
//     variant) on them for the message's aspect (or DefaultAspect) and answers
//     "Summary: S\nCitations: [i, j]" with the prompt's own sentence numbers; when nothing is cited
//     the citations are "Null." (TracSum's format, appendix G: "Summary: Unknown.\nCitations:
//     Null." when the tracker keeps no sentence);
//   - without numbered sentences but with JSON lists of strings (TracSum's summarizer prompts,
//     appendix G.2-G.3), it summarizes the first list's sentences (the last list, when there are
//     two or more, is the full-context abstract) and answers "Summary: S";
//   - otherwise it answers with the summarizer's summary of the message's sentences, for the
//     message's aspect (or DefaultAspect).
//
// A variant, which has no summarizer of given sentences, reads the sentences of the last two
// cases as its abstract.
func (t *TrackSum) Complete(ctx context.Context, messages []Message, p Params) (Completion, error) {
	c, err := t.complete(ctx, messages, p)
	if err != nil || p.MaxTokens <= 0 {
		return c, err
	}
	// max_tokens bounds the whole answer, "Summary: " and the citations included, as an LLM's
	// generated tokens would be: cut at a token boundary and count exactly what is returned.
	if cut, ok := t.tok.cut(c.Content, p.MaxTokens); ok {
		c.Content, c.CompletionTokens, c.Truncated = cut, p.MaxTokens, true
	}
	return c, nil
}

func (t *TrackSum) complete(_ context.Context, messages []Message, p Params) (Completion, error) {
	var user string
	for _, m := range messages {
		if m.Role == "user" {
			user = m.Content
		}
	}
	if strings.TrimSpace(user) == "" {
		return Completion{}, errBadRequest("the conversation has no non-empty user message")
	}
	task := ParseTask(user, t.Pipeline.AspectSet)
	aspect := cmp.Or(task.Aspect, t.DefaultAspect)
	prompt := 0
	for _, m := range messages {
		prompt += t.tok.count(m.Content)
	}
	// The request's own pipeline: its max_tokens, and a watch on the summaries' length.
	q := t.Pipeline.Clone()
	if p.MaxTokens > 0 && p.MaxTokens < q.Decode.MaxLen {
		q.Decode.MaxLen = p.MaxTokens
		q.Decode.MinLen = min(q.Decode.MinLen, q.Decode.MaxLen)
	}
	var watch *lengthWatch
	if q.Summarizer != nil {
		watch = &lengthWatch{Summarizer: q.Summarizer, tok: t.tok}
		q.Summarizer = watch
	}
	truncated := func(summary string) bool {
		if watch != nil {
			return watch.hit
		}
		return q.Decode.MaxLen > 0 && t.tok.count(summary) >= q.Decode.MaxLen
	}
	// summarize writes the summary of sentences with the summarizer; doc is the whole abstract,
	// read by a full-context (TTS (+) f) summarizer only. A variant has no summarizer of given
	// sentences: it reads them as its abstract.
	summarize := func(cited, doc []string) (string, error) {
		if q.Summarizer != nil {
			out, err := q.Summarizer.Summarize([]summarizer.Request{{Aspect: aspect, Cited: cited, Document: doc}}, q.Decode)
			if err != nil {
				return "", err
			}
			return out[0], nil
		}
		preds, err := q.Process(infer.Abstract{PMID: "request", Document: cited, Aspects: []string{aspect}})
		if err != nil {
			return "", err
		}
		return preds[0].Summary, nil
	}
	c := Completion{PromptTokens: prompt}
	if !task.Numbered() {
		var s string
		var err error
		if len(task.Lists) > 0 {
			s, err = summarize(task.Lists[0], task.Lists[len(task.Lists)-1])
			s = "Summary: " + s
		} else {
			sents := dataset.SplitSentences(user)
			if len(sents) == 0 {
				sents = []string{strings.TrimSpace(user)}
			}
			s, err = summarize(sents, sents)
		}
		if err != nil {
			return c, err
		}
		c.Content, c.CompletionTokens, c.Truncated = s, t.tok.count(s), truncated(s)
		return c, nil
	}
	preds, err := q.Process(infer.Abstract{PMID: "request", Document: task.Sentences, Aspects: []string{aspect}})
	if err != nil {
		return c, err
	}
	pred := preds[0]
	citations := "Null."
	if len(pred.Indexes) > 0 {
		labels := make([]string, len(pred.Indexes))
		for k, i := range pred.Indexes {
			labels[k] = strconv.Itoa(task.Labels[i])
		}
		citations = "[" + strings.Join(labels, ", ") + "]"
	}
	c.Content = "Summary: " + pred.Summary + "\nCitations: " + citations
	c.CompletionTokens = t.tok.count(c.Content)
	c.Truncated = len(pred.Indexes) > 0 && truncated(pred.Summary)
	return c, nil
}

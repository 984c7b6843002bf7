package serve

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/checkpoint"
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
	// MaxTokens bounds the generated summary's tokens (0: the checkpoint's limit).
	MaxTokens int
}

// Backend answers chat requests. Implementations must be safe for concurrent use.
type Backend interface {
	// Complete answers the conversation. It may ignore ctx once the model runs (decoding is not
	// interruptible); the server bounds the wait for it.
	Complete(ctx context.Context, messages []Message, p Params) (Completion, error)
}

// TrackSum serves a summarizer checkpoint, optionally with a tracker checkpoint, behind the prompt
// convention of docs/serve.md (see ParseTask and Complete).
type TrackSum struct {
	// Summarizer writes the summaries.
	Summarizer *summarizer.Summarizer
	// Tracker, when not nil, chooses the cited sentences (probability >= Threshold); without it
	// every numbered sentence is summarized and cited.
	Tracker   *tracker.Model
	Threshold float64
	// DefaultAspect is the aspect code used when a message names none.
	DefaultAspect string
	// Decode are the decoding settings (the checkpoint's by default).
	Decode decode.Options
}

// LoadTrackSum loads the checkpoints: summarizerDir is required, trackerDir may be empty.
// defaultAspect may be empty (the first aspect of the summarizer's aspect set).
func LoadTrackSum(summarizerDir, trackerDir, defaultAspect string) (*TrackSum, error) {
	if err := openFromScratch(summarizerDir, "--summarizer", checkpoint.KindSummarizer); err != nil {
		return nil, err
	}
	s, err := summarizer.Load(summarizerDir)
	if err != nil {
		return nil, err
	}
	ts := &TrackSum{Summarizer: s, Decode: s.DecodeOptions(), Threshold: 0.5}
	set := s.Meta.AspectSet
	if defaultAspect == "" {
		ts.DefaultAspect = dataset.Aspects(set)[0].Code
	} else {
		a, ok := dataset.LookupAspect(set, defaultAspect)
		if !ok {
			return nil, fmt.Errorf("--default-aspect: unknown aspect %q for aspect set %s", defaultAspect, set)
		}
		ts.DefaultAspect = a.Code
	}
	if trackerDir != "" {
		if err := openFromScratch(trackerDir, "--tracker", checkpoint.KindTracker); err != nil {
			return nil, err
		}
		t, err := tracker.Load(trackerDir)
		if err != nil {
			return nil, err
		}
		if got := t.Hyperparams().AspectSet; got != "" && got != set {
			return nil, fmt.Errorf("tracker %s has aspect set %s, summarizer %s has %s", trackerDir, got, summarizerDir, set)
		}
		ts.Tracker, ts.Threshold = t, t.Threshold()
	}
	return ts, nil
}

// openFromScratch opens the checkpoint of flag (checkpoint.OpenKind: verified, of kind) and
// refuses a fine-tuned pretrained one, which TrackSum does not run.
func openFromScratch(dir, flag, kind string) error {
	m, err := checkpoint.OpenKind(dir, flag, os.Stderr, kind)
	if err != nil {
		return err
	}
	if m.Pretrained() {
		return m.Refuse(flag, "a from-scratch "+kind+" (tracksum-serve does not run fine-tuned pretrained models)")
	}
	return nil
}

// Unknown is the answer's summary when no sentence is relevant (TracSum's negative).
const Unknown = dataset.UnknownSummary

// Complete implements Backend. The last user message is read with ParseTask:
//   - with numbered sentences, it runs Track-then-Sum for the message's aspect (or DefaultAspect)
//     and answers "Summary: S\nCitations: [i, j]" with the prompt's own sentence numbers; when the
//     tracker keeps no sentence the answer is "Summary: Unknown.\nCitations: Null." (TracSum's
//     format, appendix G);
//   - without numbered sentences but with JSON lists of strings (TracSum's summarizer prompts,
//     appendix G.2-G.3), it summarizes the first list's sentences (the last list, when there are
//     two or more, is the full-context abstract) and answers "Summary: S";
//   - otherwise it answers with the summarizer's summary of the message's sentences, for the
//     message's aspect (or DefaultAspect).
func (t *TrackSum) Complete(ctx context.Context, messages []Message, p Params) (Completion, error) {
	c, err := t.complete(ctx, messages, p)
	if err != nil || p.MaxTokens <= 0 {
		return c, err
	}
	// max_tokens bounds the whole answer, "Summary: " and the citations included, as an LLM's
	// generated tokens would be: cut at a token boundary and count exactly what is returned.
	if ids := t.Summarizer.Tok.Encode(c.Content); len(ids) > p.MaxTokens {
		c.Content = strings.ToValidUTF8(t.Summarizer.Tok.Decode(ids[:p.MaxTokens]), "")
		c.CompletionTokens, c.Truncated = p.MaxTokens, true
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
	set := t.Summarizer.Meta.AspectSet
	task := ParseTask(user, set)
	aspect := cmp.Or(task.Aspect, t.DefaultAspect)
	prompt := 0
	for _, m := range messages {
		prompt += len(t.Summarizer.Tok.Encode(m.Content))
	}
	o := t.Decode
	if p.MaxTokens > 0 && p.MaxTokens < o.MaxLen {
		o.MaxLen = p.MaxTokens
		o.MinLen = min(o.MinLen, o.MaxLen)
	}
	// doc is the whole abstract, read by a full-context (TTS (+) f) summarizer only.
	summarize := func(cited, doc []string) (string, int, error) {
		out, err := t.Summarizer.Summarize([]summarizer.Request{{Aspect: aspect, Cited: cited, Document: doc}}, o)
		if err != nil {
			return "", 0, err
		}
		return out[0], len(t.Summarizer.Tok.Encode(out[0])), nil
	}
	var c Completion
	c.PromptTokens = prompt
	if !task.Numbered() && len(task.Lists) > 0 {
		doc := task.Lists[len(task.Lists)-1]
		s, n, err := summarize(task.Lists[0], doc)
		if err != nil {
			return c, err
		}
		c.Content = "Summary: " + s
		c.CompletionTokens, c.Truncated = len(t.Summarizer.Tok.Encode(c.Content)), n >= o.MaxLen
		return c, nil
	}
	if !task.Numbered() {
		sents := dataset.SplitSentences(user)
		if len(sents) == 0 {
			sents = []string{strings.TrimSpace(user)}
		}
		s, n, err := summarize(sents, sents)
		if err != nil {
			return c, err
		}
		c.Content, c.CompletionTokens, c.Truncated = s, n, n >= o.MaxLen
		return c, nil
	}
	keep := make([]int, len(task.Sentences))
	for i := range keep {
		keep[i] = i
	}
	if t.Tracker != nil {
		scores, err := t.Tracker.ScoreBatch([]tracker.Request{{Doc: task.Sentences, Aspect: aspect}})
		if err != nil {
			return c, err
		}
		keep = keep[:0]
		for i, s := range scores[0] {
			if float64(s) >= t.Threshold {
				keep = append(keep, i)
			}
		}
	}
	if len(keep) == 0 {
		c.Content = "Summary: " + Unknown + "\nCitations: Null."
		c.CompletionTokens = len(t.Summarizer.Tok.Encode(c.Content))
		return c, nil
	}
	cited := make([]string, len(keep))
	labels := make([]string, len(keep))
	for k, i := range keep {
		cited[k] = task.Sentences[i]
		labels[k] = strconv.Itoa(task.Labels[i])
	}
	s, n, err := summarize(cited, task.Sentences)
	if err != nil {
		return c, err
	}
	c.Content = "Summary: " + s + "\nCitations: [" + strings.Join(labels, ", ") + "]"
	c.CompletionTokens = len(t.Summarizer.Tok.Encode(c.Content))
	c.Truncated = n >= o.MaxLen
	return c, nil
}

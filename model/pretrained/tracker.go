package pretrained

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/training"
)

// yesNo is where the generative tracker reads its answer: the answer turns of AnswerYes and
// AnswerNo share their first tokens (Common, e.g. "Relevance" ":") and differ at the next one (Yes
// and No); P(yes) is read from the logits after prompt + Common.
type yesNo struct {
	Common  []int32 `json:"common"`
	Yes     int32   `json:"yes"`
	No      int32   `json:"no"`
	TurnLen int     `json:"turn_len"` // the longer answer turn, for fitting prompts
}

// ErrAnswerTokens marks a tokenizer whose "Relevance:Yes." and "Relevance:No." turns do not
// differ at one token after a common prefix.
var ErrAnswerTokens = errors.New("the Yes and No answers cannot be told apart at one token")

// findYesNo renders both answers after a sample prompt and locates the deciding token.
func findYesNo(c *Chat) (yesNo, error) {
	msgs := TrackerMessages("The sentence.", "Aims or Objective")
	_, ty, err := c.Answer(msgs, AnswerYes)
	if err != nil {
		return yesNo{}, err
	}
	_, tn, err := c.Answer(msgs, AnswerNo)
	if err != nil {
		return yesNo{}, err
	}
	k := 0
	for k < len(ty) && k < len(tn) && ty[k] == tn[k] {
		k++
	}
	if k == len(ty) || k == len(tn) {
		return yesNo{}, fmt.Errorf("%s: %w", c.Tpl.Path, ErrAnswerTokens)
	}
	return yesNo{Common: slices.Clone(ty[:k]), Yes: ty[k], No: tn[k], TurnLen: max(len(ty), len(tn))}, nil
}

// trackerPrompter turns (sentence, aspect) pairs, or for the SUM-THEN-TRACK pair tracker
// (sentence, summary) pairs, into token sequences for one head.
type trackerPrompter struct {
	chat   *Chat
	head   string
	set    string
	maxLen int
	yn     yesNo // generative only
	// turns are the answer turns of AnswerYes and AnswerNo (generative only), rendered once:
	// the turn is the same after any prompt.
	turns map[bool][]int32
	// pair: the second text of a pair is a summary (PairTrackerMessages), not an aspect code.
	pair bool
}

// prompt returns the prompt's ids for the pair, its texts cut so that the prompt with what
// follows it (the answer turn, or nothing for lm_cls) fits in maxLen: the sentence for an aspect
// pair; for a summary pair, the summary down to half its tokens, then the sentence down to half,
// then the rest of the summary, then of the sentence.
func (p *trackerPrompter) prompt(sentence, against string) ([]int32, error) {
	after := 0
	if p.head == config.HeadGenerative {
		after = p.yn.TurnLen
	}
	var ids []int32
	cut, err := fit(p.maxLen, "the tracker prompt", func(cut int) (int, error) {
		var msgs []chattemplate.Message
		if p.pair {
			cs, cm := 0, 0
			if cut > 0 {
				cs, cm = pairCut(len(p.chat.Tok.Encode(sentence, false)), len(p.chat.Tok.Encode(against, false)), cut)
			}
			msgs = PairTrackerMessages(p.cutEnd(sentence, cs), p.cutEnd(against, cm))
		} else {
			msgs = TrackerMessages(p.cutEnd(sentence, cut), AspectName(p.set, against))
		}
		var err error
		ids, err = p.chat.Prompt(msgs)
		return len(ids) + after, err
	})
	if cut > 0 {
		p.chat.cut.Add(1)
	}
	return ids, err
}

// cutEnd takes cut tokens from the end of text (tokenized only when there is a cut: most prompts
// fit whole).
func (p *trackerPrompter) cutEnd(text string, cut int) string {
	if cut <= 0 {
		return text
	}
	return p.chat.Truncate(text, len(p.chat.Tok.Encode(text, false))-cut)
}

// pairCut splits a cut of a (sentence, summary) prompt into the tokens taken from the sentence (ns
// tokens) and from the summary (nm tokens), in the order prompt gives.
func pairCut(ns, nm, cut int) (fromSentence, fromSummary int) {
	take := func(have, limit int) int {
		n := min(cut, max(limit-have, 0))
		cut -= n
		return n
	}
	fromSummary = take(0, nm-nm/2)
	fromSentence = take(0, ns-ns/2)
	fromSummary += take(fromSummary, nm)
	fromSentence += take(fromSentence, ns)
	return fromSentence, fromSummary
}

// example is the training example of a labelled pair.
func (p *trackerPrompter) example(sentence, against string, label bool, weight float32) (Example, error) {
	prompt, err := p.prompt(sentence, against)
	if err != nil {
		return Example{}, err
	}
	if p.head != config.HeadGenerative {
		e := Example{Tokens: prompt, Weight: weight}
		if label {
			e.Target = 1
		}
		return e, nil
	}
	turn, ok := p.turns[label]
	if !ok {
		answer := AnswerNo
		if label {
			answer = AnswerYes
		}
		// The answer turn is the same after any prompt: render it once per answer with a fixed
		// prompt, once per answer (a render per example was most of building the examples).
		if _, turn, err = p.chat.Answer(TrackerMessages("The sentence.", "Aims or Objective"), answer); err != nil {
			return Example{}, err
		}
		if p.turns == nil {
			p.turns = map[bool][]int32{}
		}
		p.turns[label] = turn
	}
	e := AnswerExample(prompt, turn)
	e.Weight = weight
	return e, nil
}

// scoreInput is what the model reads to score a pair: the prompt, followed for the generative
// head by the answer's common tokens (the yes/no logits are those after its last token).
func (p *trackerPrompter) scoreInput(sentence, against string) (Example, error) {
	prompt, err := p.prompt(sentence, against)
	if err != nil {
		return Example{}, err
	}
	if p.head == config.HeadGenerative {
		prompt = append(prompt, p.yn.Common...)
	}
	return Example{Tokens: prompt, Weight: 1}, nil
}

// labelledPair is a training or dev row of a tracker: a sentence, what it is judged against (an
// aspect code; for the SUM-THEN-TRACK pair tracker, a reference summary) and its label.
type labelledPair struct {
	PMID, Aspect  string
	SentenceIndex int32
	Sentence      string
	Against       string
	Label         bool
}

// aspectPairs are the prepared tracker rows as pairs of (sentence, aspect code).
func aspectPairs(rows []dataset.TrackerRow) []labelledPair {
	out := make([]labelledPair, len(rows))
	for i, r := range rows {
		out[i] = labelledPair{PMID: r.PMID, Aspect: r.Aspect, SentenceIndex: r.SentenceIndex, Sentence: r.Sentence, Against: r.Aspect, Label: r.Label}
	}
	return out
}

// summaryPairs are the prepared sum_then_track rows as pairs of (sentence, reference summary).
func summaryPairs(rows []dataset.SumThenTrackRow) []labelledPair {
	out := make([]labelledPair, len(rows))
	for i, r := range rows {
		out[i] = labelledPair{PMID: r.PMID, Aspect: r.Aspect, SentenceIndex: r.SentenceIndex, Sentence: r.Sentence, Against: r.Summary, Label: r.Label}
	}
	return out
}

// trackerExamples builds the training examples of rows under tracker.imbalance (tracker.Weigh,
// the rule of every tracker backbone), each rendered by labelled.
func trackerExamples(ctx context.Context, labelled func(sentence, against string, label bool, weight float32) (Example, error),
	rows []labelledPair, tc config.Tracker) ([]Example, error) {
	labels := make([]bool, len(rows))
	for i, r := range rows {
		labels[i] = r.Label
	}
	return tracker.Weigh(ctx, tc, labels, func(i int, w float32) (Example, error) {
		r := rows[i]
		e, err := labelled(r.Sentence, r.Against, r.Label, w)
		if err != nil {
			return Example{}, fmt.Errorf("abstract %s, aspect %s, sentence %d: %w", r.PMID, r.Aspect, r.SentenceIndex, err)
		}
		return e, nil
	})
}

// trackerNet is a pretrained tracker head as the tracker task's backbone (tracker.Fit): the
// model m of the tracker t, its training examples train in batches of build (the head's
// layout, packed or not) and the training graph loss, and the dev pairs.
type trackerNet struct {
	s         *session
	t         *Tracker
	m         trainable
	batchSize int
	train     []Example
	build     func([]Example) training.Batch
	loss      training.LossFn
	dev       []labelledPair
}

// Training implements tracker.Backbone: only the trained variables are saved (the frozen base is
// read from its snapshot).
func (n *trackerNet) Training() training.Options {
	return training.Options{
		Backend: n.s.backend,
		Store:   n.m.Store(),
		Loss:    n.loss,
		Batches: func(epoch int) ([]training.Batch, error) {
			return epochBatches(n.train, n.batchSize, n.s.cfg.Seed, epoch, n.build), nil
		},
		Saved: n.m.Trained,
	}
}

// DevScores implements tracker.Backbone.
func (n *trackerNet) DevScores() ([]float32, error) { return n.t.scoreRows(n.dev) }

// readRows reads the rows of one split of a prepared directory.
func readRows[T any](dir, task, split string) ([]T, error) {
	var out []T
	for row, err := range dataset.ReadShards[T](dir, task, split) {
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}

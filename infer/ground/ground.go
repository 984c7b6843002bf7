// Package ground makes a summary and its citations agree: in TracSum's citation metrics a cited
// sentence counts only when it supports a claim of the summary, so a summarizer that drops what a
// tracked sentence says leaves a citation that backs nothing, and the reader loses that fact.
//
// Grounding looks at each cited sentence of a positive prediction and asks whether it supports
// one of the summary's claims, with the offline lexical entailment test of eval/judge (the
// lexical judge's test: stemmed content words and numbers of the claim found in the sentence,
// negation agreeing). A sentence that supports nothing is then, by Mode:
//
//   - ModeRestore: put back, its text (without a section label such as "RESULTS:") appended to
//     the summary, so that every citation backs a claim and no tracked fact is lost;
//   - ModePrune: dropped from the citations (the summary is kept);
//   - ModeOff: left alone.
//
// Because the support test is the lexical judge's own, grounding is favoured by construction when
// predictions are scored with the lexical judge; an LLM judge is the independent check.
//
// # Example
//
//	g := ground.New(ground.ModeRestore, judge.LexicalOptions{Threshold: 0.6, MinClauseWords: 2})
//	summary, indexes, changed := g.Apply(doc, summary, indexes)
package ground

import (
	"context"
	"strings"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/judge"
)

// Mode says what happens to a cited sentence that supports no claim of its summary.
type Mode string

// The modes; ModeOff is the default (config infer.grounding).
const (
	ModeOff     Mode = "off"
	ModePrune   Mode = "prune"
	ModeRestore Mode = "restore"
)

// Grounder applies one Mode with one lexical support test. It is safe for concurrent use.
type Grounder struct {
	mode  Mode
	judge *judge.Lexical
}

// New returns a Grounder; opts are the lexical test's settings (config eval.lexical).
func New(mode Mode, opts judge.LexicalOptions) *Grounder {
	return &Grounder{mode: mode, judge: judge.NewLexical(opts)}
}

// Mode returns the grounder's mode.
func (g *Grounder) Mode() Mode { return g.mode }

// Apply grounds one prediction: doc is the abstract, summary and indexes the prediction's summary
// and cited sentence indices (ascending, inside doc). It returns the new summary and indices and
// how many citations were restored or pruned. A negative prediction ("Unknown." or no citation)
// and ModeOff return their input unchanged. Pruning never removes the last citation: a positive
// summary keeps at least the citation it was written from.
func (g *Grounder) Apply(doc []string, summary string, indexes []int) (string, []int, int) {
	if g == nil || g.mode == ModeOff || len(indexes) == 0 || dataset.IsUnknownSummary(summary) {
		return summary, indexes, 0
	}
	ctx := context.Background()
	// The lexical judge never fails; the errors are part of the Judge interface for LLM judges.
	claims, _ := g.judge.Decompose(ctx, summary)
	var kept, unsupported []int
	for _, i := range indexes {
		if i < 0 || i >= len(doc) {
			kept = append(kept, i)
			continue
		}
		supports := false
		for _, c := range claims {
			if ok, _ := g.judge.Entails(ctx, doc[i], c); ok {
				supports = true
				break
			}
		}
		if supports {
			kept = append(kept, i)
		} else {
			unsupported = append(unsupported, i)
		}
	}
	if len(unsupported) == 0 {
		return summary, indexes, 0
	}
	switch g.mode {
	case ModePrune:
		if len(kept) == 0 {
			return summary, indexes, 0
		}
		return summary, kept, len(unsupported)
	default: // ModeRestore
		out, restored := strings.TrimSpace(summary), 0
		for _, i := range unsupported {
			s := strings.TrimSpace(dataset.SectionLabel.ReplaceAllString(doc[i], ""))
			if s != "" && strings.Contains(normalized(out), normalized(s)) {
				// The summary already holds the sentence's text (the judge missed it, e.g. for
				// a label or a cut word next to it): appending it would repeat it.
				continue
			}
			restored++
			switch {
			case s == "":
			case out == "":
				out = s
			case strings.HasSuffix(out, ".") || strings.HasSuffix(out, "!") || strings.HasSuffix(out, "?"):
				out += " " + s
			default: // end the summary's last sentence, so that the judge splits the claims there
				out += ". " + s
			}
		}
		return out, indexes, restored
	}
}

// normalized is s in lower case with its spaces collapsed and its final punctuation dropped, for
// finding a sentence inside a summary that differs from it only there.
func normalized(s string) string {
	return strings.TrimRight(strings.ToLower(strings.Join(strings.Fields(s), " ")), ".!?;: ")
}

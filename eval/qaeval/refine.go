package qaeval

import (
	"context"
	"fmt"
	"strings"

	"github.com/tracksum/tracksum/dataset"
)

// Round is one step of a refinement: the summary of that round, its assessment, and (from round
// 1 on) the instruction kind that produced it.
type Round struct {
	// Round is 0 for the initial summary, then 1, 2, ...
	Round   int    `json:"round"`
	Summary string `json:"summary"`
	// Instruction is "coverage" or "consistency": the feedback the revision was asked to address
	// ("" for round 0).
	Instruction string     `json:"instruction,omitempty"`
	Assessment  Assessment `json:"assessment"`
	// Malformed is set when the revision answer was empty or unusable (the round keeps the
	// previous summary).
	Malformed bool `json:"malformed,omitempty"`
}

// Refinement is the whole record of a refinement.
type Refinement struct {
	// Rounds are every round, the initial one first.
	Rounds []Round `json:"rounds"`
	// Best is the index in Rounds of the summary kept (the best score).
	Best int `json:"best"`
	// Stop says why the loop ended.
	Stop string `json:"stop"`
}

// Final returns the kept summary.
func (r *Refinement) Final() string { return r.Rounds[r.Best].Summary }

// quality is the score refinement tries to raise: the mean of the defined scores (-1 when none is).
func quality(a Assessment) float64 {
	var sum float64
	n := 0
	for _, v := range []*float64{a.Coverage, a.Consistency} {
		if v != nil {
			sum += *v
			n++
		}
	}
	if n == 0 {
		return -1
	}
	return sum / float64(n)
}

// meets reports whether both defined scores reach their targets.
func (m *Metric) meets(a Assessment) bool {
	return (a.Coverage == nil || *a.Coverage >= m.opts.CoverageTarget) &&
		(a.Consistency == nil || *a.Consistency >= m.opts.ConsistencyTarget)
}

// Refine runs LongSumEval's self-refinement (Algorithm 2) for at most rounds revisions: assess the
// latest summary; stop when both scores meet the targets; otherwise turn the coverage feedback
// (when coverage is below its target) or else the consistency feedback into revision
// instructions, ask for a revision of that summary, and assess it. Every round is kept, and the
// summary kept at the end is the best-scoring one (the earliest of equals): Algorithm 2's last
// line is commented "best summary", and a revision that scores lower should not replace a better
// one. As in the paper, a revision that does not raise the scores does not end the loop (the next
// round revises it); with Options.EarlyStop the loop ends at the first such round instead (our
// earlier rule, cheaper). A negative summary ("Unknown.") is not refined: whether the aspect is
// present is the tracker's decision.
func (m *Metric) Refine(ctx context.Context, focus, source, document, summary string, rounds int) (*Refinement, error) {
	a, err := m.Assess(ctx, focus, source, document, summary)
	if err != nil {
		return nil, err
	}
	r := &Refinement{Rounds: []Round{{Round: 0, Summary: summary, Assessment: a}}}
	switch {
	case dataset.IsUnknownSummary(summary):
		r.Stop = "negative summary: not refined"
		return r, nil
	case rounds < 1:
		r.Stop = "no refinement round asked"
		return r, nil
	}
	for i := 1; ; i++ {
		// Algorithm 2 revises S(i), the latest summary. With early stopping the latest is always
		// the best, since the loop ends at the first round that is not better.
		cur := r.Rounds[len(r.Rounds)-1]
		if quality(cur.Assessment) < 0 {
			r.Stop = "no score to improve: " + strings.Join(cur.Assessment.Malformed, ", ")
			if len(cur.Assessment.Malformed) == 0 {
				r.Stop = "no score to improve"
			}
			return r, nil
		}
		if m.meets(cur.Assessment) {
			r.Stop = "targets met"
			return r, nil
		}
		if i > rounds {
			r.Stop = fmt.Sprintf("%d rounds done", rounds)
			return r, nil
		}
		fb := cur.Assessment.Feedback
		var prompt, kind string
		switch {
		case cur.Assessment.Coverage != nil && *cur.Assessment.Coverage < m.opts.CoverageTarget && len(fb.Unanswered) > 0:
			kind, prompt = "coverage", CoverageRevisionPrompt(focus, document, cur.Summary, fb.Unanswered)
		case len(fb.Inconsistent) > 0:
			kind, prompt = "consistency", ConsistencyRevisionPrompt(focus, document, cur.Summary, fb.Inconsistent)
		default:
			r.Stop = "no actionable feedback"
			return r, nil
		}
		answer, err := m.ask(ctx, prompt)
		if err != nil {
			return r, err
		}
		revised, ok := ParseRevision(answer)
		if !ok {
			// The same prompt would get the same answer back (temperature 0, cache): stop.
			r.Rounds = append(r.Rounds, Round{Round: i, Summary: cur.Summary, Instruction: kind, Assessment: cur.Assessment, Malformed: true})
			r.Stop = "malformed revision"
			return r, nil
		}
		na, err := m.Assess(ctx, focus, source, document, revised)
		if err != nil {
			return r, err
		}
		r.Rounds = append(r.Rounds, Round{Round: i, Summary: revised, Instruction: kind, Assessment: na})
		if quality(na) > quality(r.Rounds[r.Best].Assessment) {
			r.Best = len(r.Rounds) - 1
		} else if m.opts.EarlyStop {
			r.Stop = fmt.Sprintf("round %d did not improve the scores", i)
			return r, nil
		}
	}
}

// CoverageRevisionPrompt asks for a revision that answers the unanswered questions (the paper's
// coverage-oriented refinement, in our words).
func CoverageRevisionPrompt(focus, document, summary string, unanswered []string) string {
	var b strings.Builder
	b.WriteString("Instructions:\n" +
		"The summary below leaves out important information of the document: it does not answer the questions " +
		"listed under \"Missing information\". Rewrite the summary so that it answers them, using only facts " +
		"stated in the document. Keep it concise and readable, and keep what the summary already says correctly.\n")
	if focus != "" {
		fmt.Fprintf(&b, "The summary is about this aspect of the study only: %s.\n", focus)
	}
	b.WriteString("Reply with the revised summary only.\n\n")
	b.WriteString("Document:\n" + strings.TrimSpace(document) + "\n\n")
	b.WriteString("Summary:\n" + strings.TrimSpace(summary) + "\n\n")
	b.WriteString("Missing information:\n")
	for _, q := range unanswered {
		b.WriteString("- " + q + "\n")
	}
	b.WriteString("\nRevised summary:\n")
	return b.String()
}

// ConsistencyRevisionPrompt asks for a revision that corrects the inconsistent claims with the
// document's answers (the paper's consistency-oriented refinement, in our words).
func ConsistencyRevisionPrompt(focus, document, summary string, wrong []Correction) string {
	var b strings.Builder
	b.WriteString("Instructions:\n" +
		"Some statements of the summary below disagree with the document. Rewrite the summary so that every " +
		"fact agrees with the correct answers listed under \"Corrections\". Change only what is needed for that; " +
		"do not add or remove other information, and keep the summary readable.\n")
	if focus != "" {
		fmt.Fprintf(&b, "The summary is about this aspect of the study only: %s.\n", focus)
	}
	b.WriteString("Reply with the revised summary only.\n\n")
	b.WriteString("Document:\n" + strings.TrimSpace(document) + "\n\n")
	b.WriteString("Summary:\n" + strings.TrimSpace(summary) + "\n\n")
	b.WriteString("Corrections:\n")
	for _, c := range wrong {
		correct := c.Correct
		if isUnanswerable(correct) {
			correct = "the document does not say this (" + Unanswerable + "); remove the claim"
		}
		fmt.Fprintf(&b, "Question: %s\nThe summary says: %s\nCorrect answer: %s\n", c.Question, c.Claimed, correct)
	}
	b.WriteString("\nRevised summary:\n")
	return b.String()
}

// ParseRevision reads a revised summary: the answer without a "Revised summary:" label, code
// fences, a trailing "Citations:" line or enclosing quotes. ok is false for an empty answer.
func ParseRevision(answer string) (string, bool) {
	s := strings.TrimSpace(answer)
	s = strings.TrimPrefix(s, "```text")
	s = strings.TrimPrefix(s, "```")
	s = strings.TrimSuffix(s, "```")
	s = strings.TrimSpace(s)
	for _, label := range []string{"revised summary:", "summary:"} {
		if len(s) >= len(label) && strings.EqualFold(s[:len(label)], label) {
			s = strings.TrimSpace(s[len(label):])
		}
	}
	// A "Citations: [...]" line (the Track-then-Sum answer format) is not part of the summary.
	if i := strings.Index(strings.ToLower(s), "\ncitations:"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"') {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	if s == "" {
		return "", false
	}
	return s, true
}

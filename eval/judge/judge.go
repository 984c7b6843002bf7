// Package judge holds the two judges of the evaluator: the components that decompose a summary into
// atomic subclaims and decide whether a premise entails a hypothesis (the decomposition model E and
// the NLI model phi of TracSum's Algorithm 2 and PCoA's Algorithm 1).
//
//   - Lexical (the default) is an offline, deterministic and fast proxy for NLI based on stemmed
//     content-word coverage, exact number agreement and negation agreement. It is not NLI: see its
//     documentation for what it gets wrong.
//   - LLM asks any OpenAI-compatible chat-completions endpoint, with answers cached on disk.
//
// A judge that decides many pairs more cheaply together than one at a time (the nli judge of
// eval/judge/nli, whose pairs share forward passes) also implements Batcher; the evaluator then
// hands it every question of many instances in one call.
//
// # Example
//
//	j := judge.NewLexical(judge.LexicalOptions{Threshold: 0.6, MinClauseWords: 3})
//	claims, _ := j.Decompose(ctx, "The trial enrolled 151 patients, and 28% had grade 3 toxicity.")
//	ok, _ := j.Entails(ctx, "This phase IV trial included 151 patients.", claims[0])
package judge

import "context"

// Judge decomposes summaries into subclaims and decides entailment. Implementations are safe for
// concurrent use.
type Judge interface {
	// Decompose splits a summary into atomic subclaims, each a single factual statement. An empty
	// summary has no subclaims.
	Decompose(ctx context.Context, summary string) ([]string, error)
	// Entails reports whether premise entails hypothesis.
	Entails(ctx context.Context, premise, hypothesis string) (bool, error)
	// Name identifies the judge in reports, e.g. "lexical" or "llm:MODEL".
	Name() string
	// Concurrency is the number of instances worth scoring at once with this judge.
	Concurrency() int
}

// Pair is one entailment question: does Premise entail Hypothesis?
type Pair struct {
	Premise, Hypothesis string
}

// Batcher is implemented by a Judge that decides many pairs at once more cheaply than one at a
// time. EntailsAll returns, in the order of pairs, the verdict Entails gives on each; pairs may
// repeat. The evaluator (eval.Scorer) uses it when the judge has it and Entails otherwise.
type Batcher interface {
	Judge
	EntailsAll(ctx context.Context, pairs []Pair) ([]bool, error)
}

package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/llm"
)

// LLMOptions configures the llm judge (config keys eval.llm.*): it is the shared client's
// options, see llm.Options.
type LLMOptions = llm.Options

// LLM is a judge backed by an OpenAI-compatible chat-completions endpoint through the shared
// client (package llm): every answer is cached on disk under a key made of the model name and the
// request, so a rerun on the same inputs sends no request.
type LLM struct {
	client *llm.Client
	// hints are the entailment prompt's optional instructions (EntailHints), in the order given.
	hints []string
}

// ErrUnreachable marks an endpoint that could not be reached (connection refused, DNS, timeout)
// after all retries. It is llm.ErrUnreachable.
var ErrUnreachable = llm.ErrUnreachable

// NewLLM returns an llm judge; it sends nothing until the first Decompose or Entails. hints
// (values of EntailHints, config eval.llm.entail_hints) add instructions to the entailment prompt
// that the papers' NLI model (TRUE) does not get; none by default.
func NewLLM(opts LLMOptions, hints ...string) (*LLM, error) {
	if opts.BaseURL == "" || opts.Model == "" {
		return nil, errors.New("llm judge: base URL and model are required (eval.llm.base_url, eval.llm.model)")
	}
	for _, h := range hints {
		if _, ok := entailHintText[h]; !ok {
			return nil, fmt.Errorf("llm judge: unknown entailment hint %q (known: %v)", h, EntailHints)
		}
	}
	if opts.ConfigKey == "" {
		opts.ConfigKey = "eval.llm.base_url"
	}
	c, err := llm.New(opts)
	if err != nil {
		return nil, fmt.Errorf("llm judge: %w", err)
	}
	return &LLM{client: c, hints: slices.Clone(hints)}, nil
}

// Stats returns what the judge's client did so far (requests, cache hits, retries, failures).
func (j *LLM) Stats() llm.Stats { return j.client.Stats() }

// Name implements Judge.
func (j *LLM) Name() string { return "llm:" + j.client.Model() }

// Concurrency implements Judge.
func (j *LLM) Concurrency() int { return j.client.Concurrency() }

// Decompose implements Judge with the decomposition prompt (PCoA's Table 7).
func (j *LLM) Decompose(ctx context.Context, summary string) ([]string, error) {
	if dataset.IsUnknownSummary(summary) {
		return nil, nil
	}
	answer, err := j.ask(ctx, DecomposePrompt(summary), func(a string) bool { return len(ParseClaims(a)) > 0 })
	if err != nil {
		return nil, err
	}
	return ParseClaims(answer), nil
}

// Entails implements Judge with the entailment prompt.
func (j *LLM) Entails(ctx context.Context, premise, hypothesis string) (bool, error) {
	if strings.TrimSpace(premise) == "" || strings.TrimSpace(hypothesis) == "" {
		return false, nil
	}
	answer, err := j.ask(ctx, EntailPrompt(premise, hypothesis, j.hints...), func(a string) bool {
		_, ok := ParseVerdict(a)
		return ok && !llm.IsRefusal(a)
	})
	if err != nil {
		return false, err
	}
	yes, _ := ParseVerdict(answer)
	return yes, nil
}

// DecomposePrompt is the decomposition prompt: PCoA's Table 7 as the paper prints it (the prompt
// its decomposition model, Mistral-Large-2411, was given; TracSum uses the same model), with its
// demonstration. Prompts are functional text: rewording them changes the subclaims.
func DecomposePrompt(summary string) string {
	return "Instructions:\n" +
		"Please decompose the given summary into a list of atomic subclaims, where each subclaim represents a " +
		"single factual statement from the summary. Output only a list of sentences, and do not output " +
		"additional information.\n\n" +
		"Demonstration:\n" +
		"Summary:\n" +
		"Long-term follow-up showed no new safety concerns, and results were consistent with the known " +
		"tolerability profile of encorafenib plus binimetinib.\n" +
		"List of subclaims:\n" +
		"[\"Long-term follow-up was conducted.\", \"No new safety concerns were found.\", " +
		"\"Results were consistent with the known tolerability profile of encorafenib plus binimetinib.\"]\n\n" +
		"Summary:\n" + strings.TrimSpace(summary) + "\n" +
		"List of subclaims:\n"
}

// The entailment prompt's optional hints (config eval.llm.entail_hints). Each departs from the
// papers' judge, TRUE, an NLI model that reads only the premise and the hypothesis.
const (
	// HintAgreement asks that numbers, doses, percentages, groups and negations agree (what NLI
	// implies anyway, spelled out for a general LLM).
	HintAgreement = "agreement"
	// HintAbbreviations lets an abbreviation be read as its expansion: TracSum (section 6.5) shows
	// TRUE failing exactly there ("RT" for "radiation therapy"), so this hint makes the judge more
	// lenient than the paper's.
	HintAbbreviations = "abbreviations"
)

// EntailHints lists the accepted hints, in the order they are written into the prompt.
var EntailHints = []string{HintAgreement, HintAbbreviations}

var entailHintText = map[string]string{
	HintAgreement:     "Numbers, doses, percentages, groups and negations must agree.",
	HintAbbreviations: "An abbreviation may be read as its expansion when the premise makes it clear.",
}

// EntailPrompt is the entailment prompt, standing in for the papers' NLI model (TRUE): one premise,
// one hypothesis, a yes/no answer, and no other instruction unless hints (EntailHints) are given.
func EntailPrompt(premise, hypothesis string, hints ...string) string {
	var b strings.Builder
	b.WriteString("Instructions:\n" +
		"Decide whether the premise entails the hypothesis: given only the premise, must the hypothesis be true?")
	for _, h := range EntailHints {
		if slices.Contains(hints, h) {
			b.WriteString(" " + entailHintText[h])
		}
	}
	b.WriteString(" Reply with one word: yes or no.\n\n" +
		"Premise:\n" + strings.TrimSpace(premise) + "\n\n" +
		"Hypothesis:\n" + strings.TrimSpace(hypothesis) + "\n\n" +
		"Answer:\n")
	return b.String()
}

// ParseClaims reads a decomposition answer: a JSON list of strings (possibly inside a code block or
// after some text), or else one claim per non-empty line with list markers removed. A refusal
// ("I'm sorry, I can't ...") has no claims, so the judge never caches it as an answer.
func ParseClaims(answer string) []string {
	if llm.IsRefusal(answer) {
		return nil
	}
	if i, k := strings.Index(answer, "["), strings.LastIndex(answer, "]"); i >= 0 && k > i {
		var list []string
		if err := json.Unmarshal([]byte(answer[i:k+1]), &list); err == nil {
			var out []string
			for _, s := range list {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			return out
		}
	}
	var out []string
	for _, line := range strings.Split(answer, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "-*•0123456789.) "))
		if line != "" && !strings.HasPrefix(line, "```") {
			out = append(out, line)
		}
	}
	return out
}

// ParseVerdict reads a yes/no answer; ok is false when the answer is neither.
func ParseVerdict(answer string) (yes, ok bool) {
	a := strings.ToLower(strings.TrimSpace(answer))
	a = strings.TrimLeft(a, "*\"'`([ ")
	switch {
	case strings.HasPrefix(a, "yes"), strings.HasPrefix(a, "entail"), strings.HasPrefix(a, "true"):
		return true, true
	case strings.HasPrefix(a, "no"), strings.HasPrefix(a, "not"), strings.HasPrefix(a, "false"),
		strings.HasPrefix(a, "contradict"), strings.HasPrefix(a, "neutral"):
		return false, true
	}
	return false, false
}

// ask returns the answer to prompt (one user message, temperature 0) through the shared client,
// which caches usable answers and asks again for unusable ones.
func (j *LLM) ask(ctx context.Context, prompt string, usable func(string) bool) (string, error) {
	zero := 0.0
	answer, err := j.client.Chat(ctx, llm.Request{
		Messages:    []llm.Message{{Role: "user", Content: prompt}},
		Temperature: &zero,
	}, usable)
	if err != nil {
		return "", fmt.Errorf("llm judge: %w", err)
	}
	return answer, nil
}

// errUnusable marks an answer that stayed unusable after the retries.
var errUnusable = llm.ErrUnusable

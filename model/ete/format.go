package ete

import (
	"strconv"
	"strings"

	"github.com/tracksum/tracksum/model/role"
)

// Marker separates the summary from its citation indices in the model's output, as in
// "Patients with ... were randomized. [CITE] 0 3". It is plain text (the tokenizer spells it out
// in a few pieces), so any tokenizer can write it.
const Marker = "[CITE]"

// IndexedSentences returns the source sentences of the model: each prefixed by its index, "3: ...",
// so that the decoder can read which index a sentence has (TracSum's Table 19 prompt numbers
// them the same way).
func IndexedSentences(doc []string) []string {
	out := make([]string, len(doc))
	for i, s := range doc {
		out[i] = strconv.Itoa(i) + ": " + s
	}
	return out
}

// Target is the training output of an instance: its summary, the Marker and its cited indices in
// document order ("Unknown. [CITE]" for a negative).
func Target(summary string, citations []int32) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(summary))
	b.WriteString(" " + Marker)
	for _, c := range citations {
		b.WriteString(" " + strconv.Itoa(int(c)))
	}
	return b.String()
}

// Parse reads a model output for an abstract of n sentences. Everything before the last Marker is
// the summary, everything after it the indices, separated by spaces or commas (brackets ignored).
// Words that are not indices, indices outside [0, n) and repeats are dropped and counted. A
// summary that says the aspect is absent (dataset.IsUnknownSummary), or no summary at all, is the
// negative prediction, "Unknown." with no index, whatever indices follow it.
// The repairs are role.ParseMarked's, shared with the END-TO-END model on a pretrained LM.
func Parse(text string, n int) role.Output { return role.ParseMarked(text, n, Marker) }

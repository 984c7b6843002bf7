package summarizer

import "slices"

// Source layout (encoder input), built the same way for training rows and at inference:
//
//	aspect tokens [SEP] cited_1 [SEP] cited_2 ...                         segment 0
//	[CTX] sentence_1 [SEP] sentence_2 ...     (full-context variant only) segment 1
//
// The cited part is kept whole when it fits; with full context it may use at most half of
// MaxSourceLen unless the abstract is shorter, and the abstract fills the rest.

// BuildSource returns the encoder ids and segment ids for an aspect (its encoded description),
// the tracked sentences and, for a full-context model, all sentences of the abstract.
func BuildSource(h Hyperparams, aspect []int32, cited, document [][]int32) (ids, seg []int32) {
	part := func(sents [][]int32) []int32 {
		var out []int32
		for i, s := range sents {
			if i > 0 {
				out = append(out, h.SepID)
			}
			out = append(out, s...)
		}
		return out
	}
	first := append(slices.Clone(aspect), h.SepID)
	first = append(first, part(cited)...)
	if !h.FullContext {
		first = first[:min(len(first), h.MaxSourceLen)]
		return first, make([]int32, len(first))
	}
	ctx := append([]int32{h.CtxID}, part(document)...)
	budget := h.MaxSourceLen
	firstCap := max(budget/2, budget-len(ctx))
	first = first[:min(len(first), firstCap)]
	ctx = ctx[:min(len(ctx), budget-len(first))]
	ids = append(first, ctx...)
	seg = make([]int32, len(ids))
	for i := len(first); i < len(ids); i++ {
		seg[i] = 1
	}
	return ids, seg
}

// splitOn cuts ids joined by sep back into sentences (the layout of the prepared shards).
func splitOn(ids []int32, sep int32) [][]int32 {
	if len(ids) == 0 {
		return nil
	}
	var out [][]int32
	start := 0
	for i, id := range ids {
		if id == sep {
			out = append(out, ids[start:i])
			start = i + 1
		}
	}
	return append(out, ids[start:])
}

// aspectText is what the encoder reads to know the aspect: its name and description.
func aspectText(name, description string) string { return name + ": " + description }

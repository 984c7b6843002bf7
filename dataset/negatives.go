package dataset

// SummarizerNegatives reads the negative instances of a split of the prepared directory dir as
// summarizer rows: no cited sentence, the summary "Unknown.". The summarizer shards hold the
// positive instances only; the negatives are taken from the end_to_end shards, which hold every
// instance. They are the part of the paper's summarizer data (3.5K instances, "Unknown." answers
// included) and of the released script's that summarizer.train_negatives adds.
func SummarizerNegatives(dir, split string) ([]SummarizerRow, error) {
	var out []SummarizerRow
	for r, err := range ReadShards[EndToEndRow](dir, TaskEndToEnd, split) {
		if err != nil {
			return nil, err
		}
		if len(r.Citations) > 0 || !IsUnknownSummary(r.Summary) { // IsNegative, on int32 indexes
			continue
		}
		out = append(out, SummarizerRow{PMID: r.PMID, Aspect: r.Aspect, Document: r.Document, Summary: r.Summary,
			DocumentIDs: r.DocumentIDs, SummaryIDs: r.SummaryIDs})
	}
	return out, nil
}

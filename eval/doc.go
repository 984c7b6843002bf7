// Package eval is tracksum's built-in evaluator for traceable aspect-based summaries: TracSum's
// claim and citation metrics (TracSum section 4, Algorithm 2), PCoA's phrase metrics (PCoA section
// 4, Algorithm 1), exact citation metrics, ROUGE, bootstrap confidence intervals, paired
// significance tests, agreement with human scores, and the reports written by tracksum-eval.
//
// # Inputs
//
// Predictions and references are JSONL with TracSum's field names (PMID, Aspect, Summary, Indexes,
// optional Phrases), read by dataset.ReadRecords (the prediction record is dataset.Prediction; a
// negative follows dataset.IsNegative); a reference file is itself a valid prediction file.
// References must carry Document. Records are joined on (PMID, Aspect). A duplicate record, a
// prediction for an unknown instance or a cited index outside the reference's document is an error
// naming the file and line; a reference without prediction is an error unless missing=empty, which
// scores it against "Unknown." with no citation. A prediction's optional per-sentence tracker
// Scores (written by infer) must hold one probability per sentence of the reference's document;
// they feed the report's score histogram and threshold sweep, never a metric. Other extra fields
// are ignored; repeated indices count once.
//
// # Metrics of one instance
//
// A judge (package judge) decomposes summaries into atomic subclaims and decides entailment.
//
//   - Claim recall: share of the reference's subclaims entailed by the predicted summary.
//   - Claim precision: share of the prediction's subclaims entailed by the reference summary.
//   - Citations: a predicted cited sentence c' is valid when c' is in the reference set C AND the
//     sentence entails at least one subclaim of the predicted summary. Citation recall =
//     valid/|C|, citation precision = valid/|C'|.
//   - Exact citations: precision |C ∩ C'|/|C'|, recall |C ∩ C'|/|C|, no entailment involved.
//   - ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum F-measures of the predicted summary against the
//     reference summary (package rouge: Google's rouge-score, Porter stemming as configured).
//   - Phrases (only when the references carry Phrases): on the sets of distinct lowercased NLTK word
//     tokens (package wordtok) of the reference phrases T(P) and predicted phrases T(P'), a token
//     of T(P') counts when it is in T(P), in the predicted summary's tokens and in the tokens of the
//     predicted cited sentences; phrase recall = count/|T(P)|, precision = count/|T(P')|.
//
// Negative instances ("Unknown.", no citation): when reference and prediction are both negative
// every metric is 1; when exactly one is, every metric is 0 (the judge is not asked). A ratio with
// a zero denominator otherwise (a positive prediction without citations or subclaims) is 0.
//
// # Averages
//
// Group figures (overall, positive references only, and per aspect, grouping by whatever aspect
// codes occur) are per-instance means, as in the papers' tables; each F1 is the harmonic mean of
// the averaged recall and precision, not a mean of per-instance F1s. report.json also holds micro
// figures (sums of numerators over sums of denominators; a negative side counts as one unit, so
// agreeing negatives add 1/1 and disagreeing ones 0/n) and percentile bootstrap intervals of the
// means (seeded; the draws of stats.BootstrapCI, shared by all metrics; an F1 interval is that of
// the harmonic mean of the resampled recall and precision means).
//
// # Example
//
//	cfg := config.Default()
//	out, err := eval.Evaluation(ctx, "pred.jsonl", "ref.jsonl", cfg.Eval, os.Stderr)
//	if err != nil {
//		return err
//	}
//	fmt.Println(out.Report.Overall.Mean[eval.CitationF1])
package eval

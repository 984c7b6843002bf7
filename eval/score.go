package eval

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/textmetrics/rouge"
	"github.com/tracksum/tracksum/textmetrics/wordtok"
)

// Metric names one score. Per instance every metric is a fraction in [0, 1]; over a group of
// instances recall, precision and ROUGE are averaged, and each F1 is the harmonic mean of the
// averaged recall and precision (as in the papers' tables).
type Metric int

// The metrics, in report order.
const (
	ClaimRecall Metric = iota
	ClaimPrecision
	ClaimF1
	CitationRecall
	CitationPrecision
	CitationF1
	CitationExactPrecision
	CitationExactRecall
	CitationExactF1
	Rouge1F
	Rouge2F
	RougeLF
	RougeLsumF
	PhraseRecall
	PhrasePrecision
	PhraseF1
	NumMetrics
)

var metricNames = [NumMetrics]string{
	"claim_recall", "claim_precision", "claim_f1",
	"citation_recall", "citation_precision", "citation_f1",
	"citation_exact_precision", "citation_exact_recall", "citation_exact_f1",
	"rouge1_f", "rouge2_f", "rougeL_f", "rougeLsum_f",
	"phrase_recall", "phrase_precision", "phrase_f1",
}

// String returns the metric's key in report.json, e.g. "claim_recall".
func (m Metric) String() string { return metricNames[m] }

// f1Parts maps each F1 metric to its (recall, precision) pair; other metrics map to (-1, -1).
func (m Metric) f1Parts() (Metric, Metric) {
	switch m {
	case ClaimF1:
		return ClaimRecall, ClaimPrecision
	case CitationF1:
		return CitationRecall, CitationPrecision
	case CitationExactF1:
		return CitationExactRecall, CitationExactPrecision
	case PhraseF1:
		return PhraseRecall, PhrasePrecision
	}
	return -1, -1
}

// isPhrase reports whether m is a phrase metric (reported only when references carry phrases).
func (m Metric) isPhrase() bool { return m >= PhraseRecall && m <= PhraseF1 }

// ParseMetric returns the metric named s.
func ParseMetric(s string) (Metric, bool) {
	for m, n := range metricNames {
		if n == s {
			return Metric(m), true
		}
	}
	return 0, false
}

// Ratio is a numerator over a denominator, kept for micro-averaging.
type Ratio struct {
	Num, Den int
}

// Claim is a subclaim with the judge's verdict (entailed by the other side's summary).
type Claim struct {
	Text     string `json:"text"`
	Entailed bool   `json:"entailed"`
}

// Result holds the scores of one instance and what they were computed from.
type Result struct {
	PMID   string
	Aspect string
	// RefNegative and PredNegative say which sides are negative ("Unknown.", no citation).
	RefNegative  bool
	PredNegative bool
	// Values holds every metric of the instance; the F1 entries are per-instance harmonic means.
	Values [NumMetrics]float64
	// Counts holds numerator and denominator of each recall/precision metric for micro averages.
	Counts [NumMetrics]Ratio
	// HasPhrases is set when phrase metrics apply (the reference file carries phrases).
	HasPhrases bool
	// RefClaims are the reference's subclaims, each marked when the prediction entails it;
	// PredClaims are the prediction's, each marked when the reference entails it.
	RefClaims  []Claim
	PredClaims []Claim
	// RefIndexes and PredIndexes are the cited sentences (sorted sets); Valid are the predicted
	// citations that are in the reference AND entail a predicted subclaim; Uncredited are the
	// predicted citations in the reference that entail none.
	RefIndexes  []int
	PredIndexes []int
	Valid       []int
	Uncredited  []int
}

// Scorer computes the per-instance metrics with a judge and a ROUGE scorer.
type Scorer struct {
	Judge judge.Judge
	Rouge *rouge.Scorer
	// Phrases enables the phrase metrics.
	Phrases bool
}

// Score computes one instance's metrics (TracSum Algorithm 2, PCoA Algorithm 1):
//   - both sides negative: 1 on every metric; exactly one side negative: 0 on every metric (the
//     judge is not asked);
//   - claim recall: share of reference subclaims entailed by the predicted summary; claim
//     precision: share of predicted subclaims entailed by the reference summary;
//   - a predicted citation c' is valid when c' is a reference citation AND the sentence c' entails
//     at least one predicted subclaim; citation recall = valid/|C|, precision = valid/|C'|;
//   - exact citation precision/recall: |C ∩ C'| over |C'| and |C|, without entailment;
//   - ROUGE-1/2/L/Lsum F of the predicted summary against the reference summary (for Lsum each
//     summary is split into sentences, one per line, with dataset.SplitSentences);
//   - phrase metrics on NLTK word tokens (PCoA Algorithm 1, lines 14-17): a predicted phrase
//     token counts when it is a reference phrase token, a token of the predicted summary and a
//     token of a predicted cited sentence; recall = count/|T(P)|, precision = count/|T(P')| with
//     T the sets of distinct lowercased tokens. Both token sets empty gives 1.
//
// A ratio with a zero denominator (a positive prediction that cites nothing or has no subclaim)
// scores 0.
func (s *Scorer) Score(ctx context.Context, p *Pair) (Result, error) {
	pl, err := s.plan(ctx, p)
	if err != nil || pl.done {
		return pl.res, err
	}
	return s.finish(p, pl, func(premise, hypothesis string) (bool, error) {
		return s.Judge.Entails(ctx, premise, hypothesis)
	})
}

// plan is an instance's scoring up to the judge's entailment questions: the result so far (final
// when done: a negative side) and the decomposed claims.
type plan struct {
	res                   Result
	done                  bool
	refClaims, predClaims []string
	predSummary           string // the predicted summary, "" for an unknown one
}

// plan scores the negative cases and decomposes both summaries.
func (s *Scorer) plan(ctx context.Context, p *Pair) (plan, error) {
	ref, pred := &p.Ref, &p.Pred
	res := Result{
		PMID: ref.PMID, Aspect: ref.Aspect,
		RefNegative: ref.IsNegative(), PredNegative: pred.IsNegative(),
		HasPhrases: s.Phrases,
		RefIndexes: ref.Indexes, PredIndexes: pred.Indexes,
	}
	if res.RefNegative || res.PredNegative {
		v, c := 0.0, 0
		if res.RefNegative && res.PredNegative {
			v, c = 1, 1
		}
		for m := range NumMetrics {
			res.Values[m] = v
		}
		// The negative side counts as one unit (the claim "Unknown.", the empty citation set),
		// so that micro totals reward agreeing negatives and penalise disagreeing ones.
		unit := func(neg bool, n int) int {
			if neg {
				return 1
			}
			return max(n, 1)
		}
		rc, pc := unit(res.RefNegative, len(ref.Indexes)), unit(res.PredNegative, len(pred.Indexes))
		// Claims and phrases are not decomposed here, so each side counts as one unit for them.
		for _, m := range []Metric{ClaimRecall, ClaimPrecision, PhraseRecall, PhrasePrecision} {
			res.Counts[m] = Ratio{c, 1}
		}
		res.Counts[CitationRecall] = Ratio{c, rc}
		res.Counts[CitationExactRecall] = Ratio{c, rc}
		res.Counts[CitationPrecision] = Ratio{c, pc}
		res.Counts[CitationExactPrecision] = Ratio{c, pc}
		return plan{res: res, done: true}, nil
	}

	refClaims, err := s.Judge.Decompose(ctx, ref.Summary)
	if err != nil {
		return plan{res: res}, err
	}
	predClaims, err := s.Judge.Decompose(ctx, pred.Summary)
	if err != nil {
		return plan{res: res}, err
	}
	predSummary := pred.Summary
	if dataset.IsUnknownSummary(predSummary) {
		predSummary = ""
	}
	return plan{res: res, refClaims: refClaims, predClaims: predClaims, predSummary: predSummary}, nil
}

// questions lists every entailment question finish may ask about p (with a batching judge all are
// asked; finish stops asking about a citation at its first entailed claim).
func (pl *plan) questions(p *Pair) []judge.Pair {
	var qs []judge.Pair
	for _, l := range pl.refClaims {
		qs = append(qs, judge.Pair{Premise: pl.predSummary, Hypothesis: l})
	}
	for _, l := range pl.predClaims {
		qs = append(qs, judge.Pair{Premise: p.Ref.Summary, Hypothesis: l})
	}
	for _, c := range p.Pred.Indexes {
		if _, in := slices.BinarySearch(p.Ref.Indexes, c); in {
			for _, l := range pl.predClaims {
				qs = append(qs, judge.Pair{Premise: p.Ref.Document[c], Hypothesis: l})
			}
		}
	}
	return qs
}

// finish computes p's metrics from its plan, asking entails the judge's questions.
func (s *Scorer) finish(p *Pair, pl plan, entails func(premise, hypothesis string) (bool, error)) (Result, error) {
	ref, pred := &p.Ref, &p.Pred
	res, refClaims, predClaims, predSummary := pl.res, pl.refClaims, pl.predClaims, pl.predSummary
	var n int
	var err error
	if res.RefClaims, n, err = judgeClaims(entails, predSummary, refClaims); err != nil {
		return res, err
	}
	res.Counts[ClaimRecall] = Ratio{n, len(refClaims)}
	if res.PredClaims, n, err = judgeClaims(entails, ref.Summary, predClaims); err != nil {
		return res, err
	}
	res.Counts[ClaimPrecision] = Ratio{n, len(predClaims)}

	hits := 0
	for _, c := range pred.Indexes {
		if _, in := slices.BinarySearch(ref.Indexes, c); !in {
			continue
		}
		hits++
		valid := false
		for _, l := range predClaims {
			ok, err := entails(ref.Document[c], l)
			if err != nil {
				return res, err
			}
			if ok {
				valid = true
				break
			}
		}
		if valid {
			res.Valid = append(res.Valid, c)
		} else {
			res.Uncredited = append(res.Uncredited, c)
		}
	}
	res.Counts[CitationRecall] = Ratio{len(res.Valid), len(ref.Indexes)}
	res.Counts[CitationPrecision] = Ratio{len(res.Valid), len(pred.Indexes)}
	res.Counts[CitationExactRecall] = Ratio{hits, len(ref.Indexes)}
	res.Counts[CitationExactPrecision] = Ratio{hits, len(pred.Indexes)}

	rs := s.Rouge.Score(sentencesPerLine(ref.Summary), sentencesPerLine(predSummary))
	res.Values[Rouge1F] = rs.R1.F
	res.Values[Rouge2F] = rs.R2.F
	res.Values[RougeLF] = rs.RL.F
	res.Values[RougeLsumF] = rs.RLsum.F

	if s.Phrases {
		hit, nRef, nPred := phraseCounts(ref, pred, predSummary)
		res.Counts[PhraseRecall] = Ratio{hit, nRef}
		res.Counts[PhrasePrecision] = Ratio{hit, nPred}
		if nRef == 0 && nPred == 0 {
			res.Values[PhraseRecall], res.Values[PhrasePrecision] = 1, 1
		}
	}
	for _, m := range []Metric{ClaimRecall, ClaimPrecision, CitationRecall, CitationPrecision,
		CitationExactRecall, CitationExactPrecision, PhraseRecall, PhrasePrecision} {
		if c := res.Counts[m]; c.Den > 0 {
			res.Values[m] = float64(c.Num) / float64(c.Den)
		}
	}
	for _, m := range []Metric{ClaimF1, CitationF1, CitationExactF1, PhraseF1} {
		r, pr := m.f1Parts()
		res.Values[m] = F1(res.Values[r], res.Values[pr])
	}
	return res, nil
}

// sentencesPerLine puts each sentence of a summary on its own line: ROUGE-Lsum (rouge-score)
// treats newlines as sentence boundaries, while ROUGE-1/2/L read newlines as plain separators.
func sentencesPerLine(summary string) string {
	return strings.Join(dataset.SplitSentences(summary), "\n")
}

// phraseCounts implements PCoA Algorithm 1, lines 14-17, on distinct lowercased NLTK tokens.
func phraseCounts(ref, pred *dataset.Record, predSummary string) (hit, nRef, nPred int) {
	refTok := tokenSet(ref.Phrases...)
	predTok := tokenSet(pred.Phrases...)
	sumTok := tokenSet(predSummary)
	cited := make([]string, 0, len(pred.Indexes))
	for _, c := range pred.Indexes {
		cited = append(cited, ref.Document[c])
	}
	citedTok := tokenSet(cited...)
	for t := range predTok {
		_, a := refTok[t]
		_, b := sumTok[t]
		_, c := citedTok[t]
		if a && b && c {
			hit++
		}
	}
	return hit, len(refTok), len(predTok)
}

// tokenSet returns the distinct lowercased tokens of texts as NLTK's default word_tokenize makes
// them: each text is split into sentences first (dataset.SplitSentences standing in for punkt,
// which Debian's NLTK lacks), then each sentence is tokenized (wordtok: preserve_line=True on one
// sentence). Tokenizing a whole multi-sentence summary as one line would leave a word that ends
// an inner sentence with its period ("placebo." for "placebo"), so a summary's phrase would not
// match itself.
func tokenSet(texts ...string) map[string]struct{} {
	m := map[string]struct{}{}
	for _, t := range texts {
		for _, s := range dataset.SplitSentences(t) {
			for _, w := range wordtok.Tokenize(s) {
				m[strings.ToLower(w)] = struct{}{}
			}
		}
	}
	return m
}

// F1 is the harmonic mean of recall and precision (0 when both are 0).
func F1(recall, precision float64) float64 {
	if recall+precision == 0 {
		return 0
	}
	return 2 * recall * precision / (recall + precision)
}

// judgeClaims asks entails whether premise entails each claim, in order, and returns the claims
// with their verdicts and the number entailed; on an error, those judged so far.
func judgeClaims(entails func(premise, hypothesis string) (bool, error), premise string, claims []string) ([]Claim, int, error) {
	var out []Claim
	n := 0
	for _, l := range claims {
		ok, err := entails(premise, l)
		if err != nil {
			return out, n, err
		}
		out = append(out, Claim{l, ok})
		if ok {
			n++
		}
	}
	return out, n, nil
}

// Evaluate scores every pair with workers goroutines (0: the judge's Concurrency, or one per CPU).
// Results are in the order of pairs whatever the scheduling. progress, when not nil, is called
// after each instance.
//
// A judge that is a judge.Batcher gets every question of batchGroup*workers instances in one
// EntailsAll call (the instances decomposed by workers goroutines); any other judge is asked one
// pair at a time by the instance's worker, as Score does. Both give the same results.
func (s *Scorer) Evaluate(ctx context.Context, pairs []Pair, workers int, progress func()) ([]Result, error) {
	if workers <= 0 {
		workers = s.Judge.Concurrency()
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if b, ok := s.Judge.(judge.Batcher); ok {
		return s.evaluateBatched(ctx, b, pairs, workers, progress)
	}
	return scorePairs(ctx, pairs, workers, progress, s.Score)
}

// batchGroup instances per worker go to a batching judge in one call: enough pairs (about 8 per
// instance on TracSum's dev set, so ~500 with the nli judge's default 16 workers) that its passes
// are full and its length sort pays, few enough that the progress bar moves (544 instances: 9
// calls).
const batchGroup = 4

// evaluateBatched is Evaluate with a batching judge: per group of instances, plan each (workers
// goroutines), ask every distinct question in one EntailsAll call, then finish each instance from
// the verdicts.
func (s *Scorer) evaluateBatched(ctx context.Context, b judge.Batcher, pairs []Pair, workers int, progress func()) ([]Result, error) {
	out := make([]Result, 0, len(pairs))
	group := max(1, batchGroup*workers)
	for lo := 0; lo < len(pairs); lo += group {
		part := pairs[lo:min(lo+group, len(pairs))]
		plans, err := scorePairs(ctx, part, workers, nil, s.plan)
		if err != nil {
			return nil, err
		}
		index := map[judge.Pair]int{}
		var qs []judge.Pair
		for i := range part {
			for _, q := range plans[i].questions(&part[i]) {
				if _, ok := index[q]; !ok {
					index[q] = len(qs)
					qs = append(qs, q)
				}
			}
		}
		var verdicts []bool
		if len(qs) > 0 {
			if verdicts, err = b.EntailsAll(ctx, qs); err != nil {
				first, last := &part[0].Ref, &part[len(part)-1].Ref
				return nil, fmt.Errorf("instances PMID %s (%s:%d) to PMID %s (%s:%d): %w", first.PMID, first.File, first.Line,
					last.PMID, last.File, last.Line, err)
			}
			if len(verdicts) != len(qs) {
				return nil, fmt.Errorf("judge %s: %d verdicts for %d pairs", b.Name(), len(verdicts), len(qs))
			}
		}
		for i := range part {
			r := plans[i].res
			if !plans[i].done {
				r, err = s.finish(&part[i], plans[i], func(premise, hypothesis string) (bool, error) {
					k, ok := index[judge.Pair{Premise: premise, Hypothesis: hypothesis}]
					if !ok {
						return false, fmt.Errorf("judge %s: pair not asked (premise %.40q, hypothesis %.40q)", b.Name(), premise, hypothesis)
					}
					return verdicts[k], nil
				})
				if err != nil {
					p := &part[i]
					return nil, fmt.Errorf("PMID %s aspect %q (%s:%d): %w", p.Ref.PMID, p.Ref.Aspect, p.Ref.File, p.Ref.Line, err)
				}
			}
			out = append(out, r)
			if progress != nil {
				progress()
			}
		}
	}
	return out, nil
}

// scorePairs runs score on every pair with workers goroutines (at least one, at most one per
// pair) and returns the results in the order of pairs. The first error cancels the rest and is
// returned naming the pair's reference (PMID, aspect, file:line). progress, when not nil, is
// called after each pair.
func scorePairs[R any](ctx context.Context, pairs []Pair, workers int, progress func(),
	score func(context.Context, *Pair) (R, error)) ([]R, error) {
	workers = max(1, min(workers, len(pairs)))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]R, len(pairs))
	var next atomic.Int64
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(pairs) || ctx.Err() != nil {
					return
				}
				r, err := score(ctx, &pairs[i])
				if err != nil {
					once.Do(func() {
						p := &pairs[i]
						firstErr = fmt.Errorf("PMID %s aspect %q (%s:%d): %w", p.Ref.PMID, p.Ref.Aspect, p.Ref.File, p.Ref.Line, err)
						cancel()
					})
					return
				}
				out[i] = r
				if progress != nil {
					progress()
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

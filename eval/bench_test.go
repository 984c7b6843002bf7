package eval

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/textmetrics/rouge"
)

// syntheticPairs builds n (reference, prediction) pairs from templates: abstracts of 8-12
// sentences, positive and negative instances, and predictions that paraphrase, drop or change
// numbers, and cite spurious or missing sentences.
func syntheticPairs(n int) []Pair {
	rng := rand.New(rand.NewPCG(1, 2))
	drugs := []string{"nivolumab", "ipilimumab", "dabrafenib", "trametinib", "pembrolizumab", "vemurafenib", "cobimetinib", "relatlimab"}
	outcomes := []string{"progression-free survival", "overall survival", "objective response rate", "disease control", "quality of life"}
	events := []string{"rash", "fatigue", "colitis", "hepatitis", "pyrexia", "diarrhoea"}
	sentence := func() string {
		d, o, e := drugs[rng.IntN(len(drugs))], outcomes[rng.IntN(len(outcomes))], events[rng.IntN(len(events))]
		switch rng.IntN(5) {
		case 0:
			return fmt.Sprintf("This randomized phase %d trial enrolled %d adults with advanced melanoma who received %s.", 1+rng.IntN(3), 50+rng.IntN(900), d)
		case 1:
			return fmt.Sprintf("Patients received %s %d mg/kg every %d weeks, followed by maintenance with %s.", d, 1+rng.IntN(10), 2+rng.IntN(3), drugs[rng.IntN(len(drugs))])
		case 2:
			return fmt.Sprintf("The median %s was %.1f months (95%% CI: %.1f-%.1f) with %s.", o, 2+rng.Float64()*20, 1+rng.Float64(), 3+rng.Float64()*20, d)
		case 3:
			return fmt.Sprintf("Grade 3 or 4 %s occurred in %d%% of patients, and no treatment-related deaths were reported.", e, 1+rng.IntN(60))
		default:
			return fmt.Sprintf("Compared with %s, %s did not significantly improve %s in the overall population.", d, drugs[rng.IntN(len(drugs))], o)
		}
	}
	pairs := make([]Pair, n)
	aspects := []string{"a", "i", "o", "p", "m", "d", "s"}
	var doc []string
	for i := range pairs {
		if i%5 == 0 {
			doc = make([]string, 8+rng.IntN(5))
			for k := range doc {
				doc[k] = sentence()
			}
		}
		pmid := fmt.Sprint(100000 + i/5)
		ref := dataset.Instance{PMID: pmid, Aspect: aspects[i%7], Document: doc, Summary: dataset.UnknownSummary}
		pred := dataset.Instance{PMID: pmid, Aspect: ref.Aspect, Summary: dataset.UnknownSummary}
		if rng.IntN(5) > 0 {
			ref.Indexes = []int{rng.IntN(len(doc))}
			if rng.IntN(2) == 0 {
				ref.Indexes = append(ref.Indexes, rng.IntN(len(doc)))
			}
			slices.Sort(ref.Indexes)
			ref.Indexes = slices.Compact(ref.Indexes)
			var parts []string
			for _, k := range ref.Indexes {
				parts = append(parts, doc[k])
			}
			ref.Summary = strings.Join(parts, " ")
		}
		if rng.IntN(6) > 0 && len(ref.Indexes) > 0 {
			pred.Indexes = slices.Clone(ref.Indexes)
			words := strings.Fields(ref.Summary)
			switch rng.IntN(4) {
			case 0: // shortened
				words = words[:max(3, len(words)*2/3)]
			case 1: // a spurious citation
				pred.Indexes = append(pred.Indexes, rng.IntN(len(doc)))
			case 2: // a changed number
				for k, w := range words {
					if strings.ContainsAny(w, "0123456789") {
						words[k] = fmt.Sprint(rng.IntN(100))
						break
					}
				}
			}
			pred.Summary = strings.Join(words, " ")
			slices.Sort(pred.Indexes)
			pred.Indexes = slices.Compact(pred.Indexes)
		}
		pairs[i] = Pair{Ref: dataset.Record{Instance: ref}, Pred: dataset.Record{Instance: pred}}
	}
	return pairs
}

// devPairs replicates the TracSum dev data to n pairs, each copy's texts made distinct (so that the
// judge's caches do not flatter the figure), with predictions perturbed as in syntheticPairs.
func devPairs(b *testing.B, n int) []Pair {
	path := filepath.Join("..", "..", "shared", "data", "tracsum", "tracsum-dev.jsonl")
	refs, err := dataset.ReadRecordsFile(path)
	if err != nil {
		b.Skipf("TracSum dev data not available at %s: %v", path, err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pairs := make([]Pair, 0, n)
	for c := 0; len(pairs) < n; c++ {
		docs := map[string][]string{}
		for _, r := range refs {
			if len(pairs) == n {
				break
			}
			tag := fmt.Sprintf(" (copy %d)", c)
			doc, ok := docs[r.PMID]
			if !ok {
				doc = make([]string, len(r.Document))
				for k, s := range r.Document {
					doc[k] = s + tag
				}
				docs[r.PMID] = doc
			}
			ref := r
			ref.Document = doc
			ref.PMID = fmt.Sprintf("%s-%d", r.PMID, c)
			if !ref.IsNegative() {
				ref.Summary += tag
			}
			pred := dataset.Record{Instance: dataset.Instance{PMID: ref.PMID, Aspect: r.Aspect, Summary: ref.Summary, Indexes: slices.Clone(r.Indexes)}}
			if !ref.IsNegative() {
				switch rng.IntN(4) {
				case 0:
					w := strings.Fields(ref.Summary)
					pred.Summary = strings.Join(w[:max(3, len(w)/2)], " ")
				case 1:
					pred.Indexes = append(pred.Indexes, rng.IntN(len(doc)))
					slices.Sort(pred.Indexes)
					pred.Indexes = slices.Compact(pred.Indexes)
				case 2:
					pred.Indexes = pred.Indexes[:len(pred.Indexes)-1]
				}
			}
			pairs = append(pairs, Pair{Ref: ref, Pred: pred})
		}
	}
	return pairs
}

// BenchmarkEvaluate scores 10,000 instances with the lexical judge (fresh caches each iteration)
// and aggregates them (overall, positive references, per aspect) with 1000 bootstrap resamples;
// it reports instances/s (wall clock) and instances/cpu-s. Run with
// `go test -run '^$' -bench Evaluate -cpu 2 -benchtime 3x ./eval/`.
func BenchmarkEvaluate(b *testing.B) {
	const n = 10000
	for _, set := range []struct {
		name  string
		pairs func(*testing.B) []Pair
	}{
		{"synthetic", func(*testing.B) []Pair { return syntheticPairs(n) }},
		{"tracsum-dev", func(b *testing.B) []Pair { return devPairs(b, n) }},
	} {
		b.Run(set.name, func(b *testing.B) {
			pairs := set.pairs(b)
			cpu0 := processCPUSeconds()
			b.ResetTimer()
			for b.Loop() {
				s := &Scorer{Judge: judge.NewLexical(judge.LexicalOptions{Threshold: 0.6, MinClauseWords: 2}), Rouge: rouge.New(rouge.Options{Stem: true})}
				res, err := s.Evaluate(context.Background(), pairs, 0, nil)
				if err != nil {
					b.Fatal(err)
				}
				BuildReport(res, false, BootstrapOptions{Resamples: 1000, Seed: 1, Level: 0.95}, Settings{})
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "instances/s")
			if cpu := processCPUSeconds() - cpu0; cpu > 0 {
				// Work per CPU second: the wall-clock figure above shrinks when other processes
				// share the cores; this one does not (GC and bootstrap included).
				b.ReportMetric(float64(n*b.N)/cpu, "instances/cpu-s")
			}
		})
	}
}

func TestSyntheticPairsAreValid(t *testing.T) {
	pairs := syntheticPairs(200)
	s := &Scorer{Judge: lexical(), Rouge: rouge.New(rouge.Options{Stem: true})}
	if _, err := s.Evaluate(context.Background(), pairs, 2, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("testdata/ref.jsonl"); err != nil {
		t.Fatal(err)
	}
}

package nli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/hf/encoder"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/model"
)

// snap writes a tiny random NLI snapshot of family (bert, roberta or deberta-v2) with labels;
// bias, the classifier's output bias, decides the label whatever the input (the random weights
// are small).
func snap(t *testing.T, family string, labels []string, bias []float32) string {
	t.Helper()
	dir := t.TempDir()
	e := randsnap.Encoder{ModelType: family, Vocab: 300, Hidden: 16, Layers: 1, Heads: 2, Intermediate: 32,
		MaxPositions: 130, Labels: labels, HeadBias: bias, Seed: 7, Pooler: family == "bert", Prefix: family + "."}
	switch family {
	case "roberta":
		e.MaxPositions = 132
	case "deberta-v2":
		e.Prefix = "deberta."
	}
	if err := randsnap.WriteEncoder(dir, e); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newJudge(t *testing.T, dir string, o Options) *Judge {
	t.Helper()
	o.Dir = dir
	if o.Threshold == 0 {
		o.Threshold = 0.5
	}
	if o.BatchSize == 0 {
		o.BatchSize = 4
	}
	o.Decomposer = judge.NewLexical(judge.LexicalOptions{Threshold: 0.6, MinClauseWords: 2})
	j, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

const (
	premise    = "the trial enrolled 151 patients. toxicity was low."
	hypothesis = "151 patients took part."
)

// TestLabelMapping: the entailment label is found by its name in id2label, for 3-way and 2-way
// label sets, in BERT and RoBERTa snapshots, whatever its index.
func TestLabelMapping(t *testing.T) {
	three := []string{"CONTRADICTION", "NEUTRAL", "ENTAILMENT"}
	for _, tc := range []struct {
		desc, family string
		labels       []string
		bias         []float32
		want         bool
	}{
		{"roberta 3-way, entailment last and winning", "roberta", three, []float32{0, 0, 6}, true},
		{"roberta 3-way, contradiction winning", "roberta", three, []float32{6, 0, 0}, false},
		{"bert 3-way, entailment first and winning", "bert", []string{"entailment", "neutral", "contradiction"}, []float32{6, 0, 0}, true},
		{"bert 3-way, neutral winning", "bert", []string{"entailment", "neutral", "contradiction"}, []float32{0, 6, 0}, false},
		{"bert 2-way entailment/not_entailment", "bert", []string{"entailment", "not_entailment"}, []float32{6, 0}, true},
		{"roberta 2-way not-entailment winning", "roberta", []string{"ENTAILMENT", "NOT-ENTAILMENT"}, []float32{0, 6}, false},
		{"bert 2-way non_entailment first", "bert", []string{"non_entailment", "entailment"}, []float32{0, 6}, true},
		{"deberta-v2 3-way, entailment second and winning", "deberta-v2", []string{"contradiction", "entailment", "neutral"}, []float32{0, 6, 0}, true},
		{"deberta-v2 3-way, neutral winning", "deberta-v2", []string{"contradiction", "entailment", "neutral"}, []float32{0, 0, 6}, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			j := newJudge(t, snap(t, tc.family, tc.labels, tc.bias), Options{})
			got, err := j.Entails(context.Background(), premise, hypothesis)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				p, _ := j.Probability(context.Background(), premise, hypothesis)
				t.Errorf("Entails = %v (p %.4f), want %v", got, p, tc.want)
			}
			if !strings.HasPrefix(j.Name(), "nli:") {
				t.Errorf("name %q", j.Name())
			}
		})
	}
}

// TestUnknownLabels: a label set that is not NLI (transformers' LABEL_0... defaults, sentiment
// labels, a duplicate) is a one-line error naming config.json.
func TestUnknownLabels(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		labels []string
	}{
		{"transformers' defaults", []string{"LABEL_0", "LABEL_1", "LABEL_2"}},
		{"sentiment", []string{"negative", "positive"}},
		{"entailment twice", []string{"entailment", "ENTAILMENT", "neutral"}},
		{"neutral without contradiction", []string{"entailment", "neutral"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := snap(t, "bert", tc.labels, nil)
			_, err := New(context.Background(), Options{Dir: dir, Threshold: 0.5, BatchSize: 2, Decomposer: judge.NewLexical(judge.LexicalOptions{})})
			if err == nil || !errors.Is(err, ErrLabels) || strings.Contains(err.Error(), "\n") ||
				!strings.Contains(err.Error(), filepath.Join(dir, "config.json")) {
				t.Fatalf("error %v: want one line naming %s/config.json and wrapping ErrLabels", err, dir)
			}
		})
	}
}

// TestNoHead: a snapshot without a classification head is not an NLI model.
func TestNoHead(t *testing.T) {
	dir := t.TempDir()
	if err := randsnap.WriteEncoder(dir, randsnap.Encoder{Vocab: 100, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 16,
		MaxPositions: 64, Prefix: "bert.", Pooler: true, Extra: map[string]any{"id2label": map[string]string{"0": "entailment", "1": "not_entailment"}}}); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Options{Dir: dir, Threshold: 0.5, BatchSize: 2, Decomposer: judge.NewLexical(judge.LexicalOptions{})})
	if err == nil || !strings.Contains(err.Error(), "no sequence-classification head") {
		t.Fatalf("error %v", err)
	}
}

// TestCache: a second judge over the same snapshot and cache directory computes nothing and
// gives the same probabilities.
func TestCache(t *testing.T) {
	dir := snap(t, "roberta", []string{"contradiction", "neutral", "entailment"}, []float32{0, 0, 0})
	cache := t.TempDir()
	pairs := [][2]string{{premise, hypothesis}, {"no toxicity was seen.", "toxicity was low."}, {premise, "the trial was small."}}
	run := func() ([]float64, Stats) {
		j := newJudge(t, dir, Options{CacheDir: cache})
		var ps []float64
		for _, p := range pairs {
			v, err := j.Probability(context.Background(), p[0], p[1])
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, v)
		}
		return ps, j.Stats()
	}
	first, s1 := run()
	second, s2 := run()
	if s1.Computed != 3 || s1.CacheHits != 0 {
		t.Errorf("first run: %s, want 3 computed", s1)
	}
	if s2.Computed != 0 || s2.CacheHits != s2.Pairs || s2.Pairs != 3 {
		t.Errorf("second run: %s, want every pair from the cache", s2)
	}
	for i := range first {
		if first[i] != second[i] {
			t.Errorf("pair %d: %v then %v from the cache", i, first[i], second[i])
		}
	}
}

// TestBatchedEqualsSingle: probabilities computed in padded batches by concurrent callers equal
// those computed one at a time.
func TestBatchedEqualsSingle(t *testing.T) {
	dir := snap(t, "bert", []string{"entailment", "neutral", "contradiction"}, nil)
	texts := []string{"a", "the dose was 10 mg", "patients were randomized to placebo or drug", "x y z", "toxicity was low in both arms of the trial"}
	one := newJudge(t, dir, Options{BatchSize: 1})
	many := newJudge(t, dir, Options{BatchSize: 8})
	want := map[int]float64{}
	for i, s := range texts {
		p, err := one.Probability(context.Background(), s, hypothesis)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = p
	}
	got := make([]float64, len(texts))
	errs := make(chan error, len(texts))
	for i, s := range texts {
		go func() {
			p, err := many.Probability(context.Background(), s, hypothesis)
			got[i] = p
			errs <- err
		}()
	}
	for range texts {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range texts {
		if math.Abs(got[i]-want[i]) > 1e-5 {
			t.Errorf("text %d: batched %v, alone %v", i, got[i], want[i])
		}
	}
	if s := many.Stats(); s.Batches >= int64(len(texts)) {
		t.Logf("no two pairs shared a batch (%s): scheduling, not an error", s)
	}
}

// TestEntailsAllEqualsSingle: EntailsAll over many pairs (repeats, empty sides, a premise cut
// into chunks, lengths from 3 to ~100 tokens) gives the probabilities of one pair at a time, for
// batch sizes that are and are not powers of two, in full passes of BatchSize rows (the last one
// excepted) and few shapes.
func TestEntailsAllEqualsSingle(t *testing.T) {
	for _, family := range []string{"bert", "roberta", "deberta-v2"} {
		dir := snap(t, family, []string{"contradiction", "neutral", "entailment"}, nil)
		long := "The trial enrolled patients. Toxicity was low. The dose was ten mg daily. Survival improved with the drug. " +
			"No new safety signal appeared. Follow-up lasted two years."
		var pairs []judge.Pair
		for i, p := range []string{"a", "the dose was 10 mg", "patients were randomized to placebo or drug", long, "x y z",
			"toxicity was low in both arms of the trial", "", premise} {
			for k, h := range []string{hypothesis, "toxicity was low.", "the trial was small and short", " "} {
				if (i+k)%3 != 2 {
					pairs = append(pairs, judge.Pair{Premise: p, Hypothesis: h})
				}
			}
		}
		pairs = append(pairs, pairs[0], pairs[5], pairs[len(pairs)-1]) // repeats
		one := newJudge(t, dir, Options{BatchSize: 1, MaxLength: 64})
		want := make([]float64, len(pairs))
		for i, p := range pairs {
			var err error
			if want[i], err = one.Probability(context.Background(), p.Premise, p.Hypothesis); err != nil {
				t.Fatal(err)
			}
		}
		for _, bs := range []int{3, 8} {
			t.Run(fmt.Sprintf("%s batch %d", family, bs), func(t *testing.T) {
				j := newJudge(t, dir, Options{BatchSize: bs, MaxLength: 64, Threshold: 0.3})
				got, err := j.Probabilities(context.Background(), pairs)
				if err != nil {
					t.Fatal(err)
				}
				for i := range pairs {
					if math.Abs(got[i]-want[i]) > 1e-5 {
						t.Errorf("pair %d %q: batched %v, alone %v", i, pairs[i], got[i], want[i])
					}
				}
				verdicts, err := j.EntailsAll(context.Background(), pairs)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range verdicts {
					if v != (got[i] >= 0.3) {
						t.Errorf("pair %d: verdict %v for probability %v", i, v, got[i])
					}
				}
				s := j.Stats()
				if s.Chunked == 0 || s.CacheHits == 0 {
					t.Errorf("stats %s: want the long premise chunked and the repeats computed once", s)
				}
				if full := (s.Computed + int64(bs) - 1) / int64(bs); s.Batches != full {
					t.Errorf("stats %s: %d passes for %d pairs in batches of %d, want %d", s, s.Batches, s.Computed, bs, full)
				}
				if s.Rows > s.Batches*int64(bs) || s.Graphs > 3 {
					t.Errorf("stats %s: more rows than full passes or too many shapes", s)
				}
			})
		}
	}
}

// TestTokenTypes: the judge feeds BERT the pair's token types (1 for the hypothesis), as
// transformers does: its probabilities on the parity checkpoint's rows are the softmax of the
// logits of BertForSequenceClassification written by tools/hfparity/bert_nli.py.
func TestTokenTypes(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "hf", "encoder", "testdata", "bert_nli")
	data, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		IDs    [][]int32 `json:"ids"`
		Types  [][]int32 `json:"token_types"`
		Mask   [][]int32 `json:"mask"`
		Logits []float32 `json:"logits"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	j := newJudge(t, dir, Options{BatchSize: 4})
	var reqs []*request
	zeroed := &request{finished: make(chan struct{})}
	for i := range g.IDs {
		n := 0
		for _, m := range g.Mask[i] {
			n += int(m)
		}
		reqs = append(reqs, &request{key: fmt.Sprint(i), ids: g.IDs[i][:n], types: g.Types[i][:n], finished: make(chan struct{})})
	}
	zeroed.key, zeroed.ids, zeroed.types = "zeroed", reqs[0].ids, make([]int32, len(reqs[0].ids))
	if err := j.compute(context.Background(), append(reqs, zeroed)); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		want := softmaxAt(g.Logits[i*j.labels:(i+1)*j.labels], j.entail)
		if math.Abs(r.p-want) > 1e-4 {
			t.Errorf("row %d: probability %v, transformers' %v", i, r.p, want)
		}
	}
	if math.Abs(zeroed.p-reqs[0].p) < 1e-4 {
		t.Errorf("row 0 with every token type 0 gives the same probability %v: the test cannot see token types", zeroed.p)
	}
}

// TestChunking: a premise longer than the model's length is cut at sentence boundaries into
// chunks that each fit beside the hypothesis, and its probability is the largest of its chunks'.
func TestChunking(t *testing.T) {
	for _, family := range []string{"bert", "roberta", "deberta-v2"} {
		t.Run(family, func(t *testing.T) {
			dir := snap(t, family, []string{"contradiction", "neutral", "entailment"}, nil)
			j := newJudge(t, dir, Options{MaxLength: 64})
			if j.MaxLength() != 64 {
				t.Fatalf("max length %d, want 64", j.MaxLength())
			}
			sentences := []string{"The trial enrolled patients.", "Toxicity was low.", "The dose was ten mg daily.",
				"Survival improved with the drug.", "No new safety signal appeared.", "Follow-up lasted two years."}
			long := strings.Join(sentences, " ")
			chunks := j.Chunks(long, hypothesis)
			if len(chunks) < 2 {
				t.Fatalf("%d chunks for a premise of %d tokens", len(chunks), len(j.tok.Encode(long, false)))
			}
			if strings.Join(chunks, " ") != long {
				t.Errorf("chunks %q do not rebuild the premise", chunks)
			}
			best := 0.0
			for _, c := range chunks {
				ids, _ := encoder.Pair(j.tok, j.sp, c, hypothesis, 1<<20)
				if len(ids) > j.MaxLength() {
					t.Errorf("chunk %q: %d tokens with the hypothesis, more than %d", c, len(ids), j.MaxLength())
				}
				p, err := j.Probability(context.Background(), c, hypothesis)
				if err != nil {
					t.Fatal(err)
				}
				best = math.Max(best, p)
			}
			p, err := j.Probability(context.Background(), long, hypothesis)
			if err != nil {
				t.Fatal(err)
			}
			if p != best {
				t.Errorf("probability of the long premise %v, want the largest of its chunks' %v", p, best)
			}
			if got := j.Chunks("Toxicity was low.", hypothesis); len(got) != 1 {
				t.Errorf("a short premise gives %d chunks", len(got))
			}
			if s := j.Stats(); s.Chunked != 1 {
				t.Errorf("stats %s: want one chunked premise", s)
			}
		})
	}
}

// TestEmpty: an empty premise or hypothesis entails nothing and costs nothing.
func TestEmpty(t *testing.T) {
	j := newJudge(t, snap(t, "bert", []string{"entailment", "not_entailment"}, []float32{6, 0}), Options{})
	for _, pair := range [][2]string{{"", hypothesis}, {premise, "  "}} {
		if ok, err := j.Entails(context.Background(), pair[0], pair[1]); err != nil || ok {
			t.Errorf("Entails(%q, %q) = %v, %v", pair[0], pair[1], ok, err)
		}
	}
	if s := j.Stats(); s.Pairs != 0 {
		t.Errorf("stats %s", s)
	}
}

// TestDebertaLength: a DeBERTa-v3 has no absolute positions, so the judge's length is
// tokenizer_config.json's model_max_length, or 512 without one.
func TestDebertaLength(t *testing.T) {
	dir := snap(t, "deberta-v2", []string{"contradiction", "entailment", "neutral"}, nil)
	if j := newJudge(t, dir, Options{}); j.MaxLength() != 130 {
		t.Errorf("max length %d, want tokenizer_config.json's 130", j.MaxLength())
	}
	path := filepath.Join(dir, "tokenizer_config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg, "model_max_length")
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	j := newJudge(t, dir, Options{})
	if j.MaxLength() != 512 {
		t.Errorf("max length %d, want 512", j.MaxLength())
	}
	// A premise longer than the model's 130 positions would allow an absolute-position model.
	long := strings.Repeat("the dose was low. ", 12)
	if _, err := j.Probability(context.Background(), long, hypothesis); err != nil {
		t.Fatal(err)
	}
}

// TestOwnBackend: a judge given its own backend (the GPU check's pure-Go reference beside the
// card's) runs on it and gives the probabilities of the process-wide one.
func TestOwnBackend(t *testing.T) {
	dir := snap(t, "deberta-v2", []string{"entailment", "neutral", "contradiction"}, nil)
	own, err := compute.NewWithConfig(model.GoBackendConfig)
	if err != nil {
		t.Fatal(err)
	}
	pairs := []judge.Pair{{Premise: premise, Hypothesis: hypothesis}, {Premise: "toxicity was low in both arms", Hypothesis: "the drug was safe"}}
	want, err := newJudge(t, dir, Options{}).Probabilities(context.Background(), pairs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := newJudge(t, dir, Options{Backend: own}).Probabilities(context.Background(), pairs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pair %d: own backend %v, process backend %v", i, got[i], want[i])
		}
	}
	// And it is the one used: once finalized, a judge on it fails.
	own.Finalize()
	if _, err := newJudge(t, dir, Options{Backend: own}).Probabilities(context.Background(), pairs[:1]); err == nil {
		t.Error("a judge on a finalized backend computed probabilities")
	}
}

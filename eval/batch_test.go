package eval

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/textmetrics/rouge"
)

// batchingJudge is the lexical judge made a judge.Batcher: EntailsAll answers with Entails and
// counts its calls and pairs, and fails on a pair containing fail (when set).
type batchingJudge struct {
	judge.Judge
	calls, pairs atomic.Int64
	fail         string
}

func (b *batchingJudge) EntailsAll(ctx context.Context, pairs []judge.Pair) ([]bool, error) {
	b.calls.Add(1)
	b.pairs.Add(int64(len(pairs)))
	out := make([]bool, len(pairs))
	for i, p := range pairs {
		if b.fail != "" && strings.Contains(p.Hypothesis, b.fail) {
			return nil, errors.New("judge down")
		}
		ok, err := b.Entails(ctx, p.Premise, p.Hypothesis)
		if err != nil {
			return nil, err
		}
		out[i] = ok
	}
	return out, nil
}

// TestBatchedScoringEqualsPerPair: a batching judge, asked every question of many instances in one
// EntailsAll call, gives exactly the results of the same judge asked one pair at a time, for any
// number of workers; judges without EntailsAll (lexical, llm) keep the per-pair path.
func TestBatchedScoringEqualsPerPair(t *testing.T) {
	var _ judge.Batcher = (*batchingJudge)(nil)
	if _, ok := judge.Judge(lexical()).(judge.Batcher); ok {
		t.Fatal("the lexical judge batches: its per-pair path (and outputs) would change")
	}
	var pairs []Pair
	for _, files := range [][2]string{{"testdata/ref.jsonl", "testdata/pred.jsonl"}, {"testdata/ref.jsonl", "testdata/ref.jsonl"},
		{"testdata/ref_phrases.jsonl", "testdata/pred_phrases.jsonl"}} {
		refs, err := dataset.ReadRecordsFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		preds, err := dataset.ReadRecordsFile(files[1])
		if err != nil {
			t.Fatal(err)
		}
		ps, err := Join(refs, preds, false)
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, ps...)
	}
	plain := &Scorer{Judge: lexical(), Rouge: rouge.New(rouge.Options{Stem: true}), Phrases: true}
	want, err := plain.Evaluate(context.Background(), pairs, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2, 64} {
		b := &batchingJudge{Judge: lexical()}
		s := &Scorer{Judge: b, Rouge: rouge.New(rouge.Options{Stem: true}), Phrases: true}
		ticks := 0
		got, err := s.Evaluate(context.Background(), pairs, workers, func() { ticks++ })
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			for i := range got {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("workers %d, instance %d: batched %+v\nper pair %+v", workers, i, got[i], want[i])
				}
			}
		}
		group := batchGroup * workers
		if calls := b.calls.Load(); calls > int64((len(pairs)+group-1)/group) || calls == 0 {
			t.Errorf("workers %d: %d EntailsAll calls for %d instances in groups of %d", workers, calls, len(pairs), group)
		}
		if ticks != len(pairs) {
			t.Errorf("workers %d: progress called %d times for %d instances", workers, ticks, len(pairs))
		}
	}
	// An error of the judge names the instances of the call.
	b := &batchingJudge{Judge: lexical(), fail: " "}
	s := &Scorer{Judge: b, Rouge: rouge.New(rouge.Options{})}
	if _, err := s.Evaluate(context.Background(), pairs, 1, nil); err == nil || !strings.Contains(err.Error(), "judge down") ||
		!strings.Contains(err.Error(), "PMID "+pairs[0].Ref.PMID) {
		t.Errorf("error %v: want the judge's, naming the instances", err)
	}
}

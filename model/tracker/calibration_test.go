package tracker

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tracksum/tracksum/config"
)

func TestBestShifts(t *testing.T) {
	ex := func(aspect int32, label float32) Example { return Example{Aspect: aspect, Label: label} }
	for _, tc := range []struct {
		name      string
		logits    []float64
		exs       []Example
		threshold float64
		want      []float64
	}{
		{"separable at the cut keeps 0", []float64{1, 2, -1, -2}, []Example{ex(0, 1), ex(0, 1), ex(0, 0), ex(0, 0)}, 0.5, []float64{0}},
		// Positives at -0.8 and -1.0, negatives at -2 and -3: the first shift of the grid that
		// tracks both positives and no negative is +1.0 (the grid tries 0, +0.05, -0.05, ...).
		{"too low", []float64{-0.8, -1.0, -2, -3}, []Example{ex(0, 1), ex(0, 1), ex(0, 0), ex(0, 0)}, 0.5, []float64{1}},
		{"too high", []float64{2, 1.5, 0.4, 0.3}, []Example{ex(0, 1), ex(0, 1), ex(0, 0), ex(0, 0)}, 0.5, []float64{-0.45}},
		{"per aspect, empty aspect keeps 0", []float64{-0.8, -2, 2, 0.4}, []Example{ex(0, 1), ex(0, 0), ex(2, 1), ex(2, 0)}, 0.5, []float64{0.8, 0, -0.45}},
		// threshold 0.8 puts the cut at logit ln 4 = 1.386: the positive at 1 needs +0.4.
		{"threshold", []float64{1, -1}, []Example{ex(0, 1), ex(0, 0)}, 0.8, []float64{0.4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bestShifts(tc.logits, tc.exs, len(tc.want), tc.threshold)
			for a := range got {
				if math.Abs(got[a]-tc.want[a]) > 1e-9 {
					t.Fatalf("shifts %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// calibrationData builds abstracts of one aspect where token 5 marks a relevant sentence two times
// in three and token 6 one time in twenty; with pos_weight 30 the regression's probability of a
// token-6 sentence is about 30*0.05/(30*0.05+0.95) = 0.61, so at 0.5 it tracks them all and
// loses F1: the best cut tracks only token-5 sentences, which needs a negative shift.
func calibrationData(abstracts int, prefix string) SplitData {
	var s SplitData
	for d := range abstracts {
		pmid := fmt.Sprintf("%s%04d", prefix, d)
		for i := range 10 {
			tok, label := int32(7), float32(0)
			switch {
			case i < 3:
				tok = 5
				if i != d%3 {
					label = 1
				}
			case i < 7:
				tok = 6
				if (d*4+i-3)%20 == 0 {
					label = 1
				}
			}
			s.Examples = append(s.Examples, Example{IDs: []int32{tok}, Aspect: 0, Pos: PositionFeatures(i, 10), Label: label, Weight: 1})
			s.Keys = append(s.Keys, RowKey{PMID: pmid, Aspect: "a", SentenceIndex: i})
		}
	}
	return s
}

func TestLexicalCalibration(t *testing.T) {
	tc := config.DefaultTracker()
	tc.NgramBuckets, tc.PosWeight, tc.LexicalL2 = 64, 30, 1e-4
	hp := NewHyperparams(tc, 16, "test", []string{"a"}, []string{"aims"})
	train := calibrationData(60, "t")
	shifts, err := lexicalCalibration(hp, tc, train, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(shifts) != 1 || shifts[0] >= 0 {
		t.Fatalf("shifts %v, want one negative shift", shifts)
	}
	again, err := lexicalCalibration(hp, tc, train, 5, 1)
	if err != nil || !slices.Equal(again, shifts) {
		t.Fatalf("not deterministic: %v then %v (%v)", shifts, again, err)
	}

	// The shift improves the F1 at 0.5 on abstracts it has not seen.
	test := calibrationData(40, "u")
	idfTok, idfBi := idfTables(hp, train.Examples)
	w := fitLexicalWeights(hp, weighTraining(train.Examples, tc), idfTok, idfBi, tc.LexicalL2)
	f1At := func(shift float64) float64 {
		probs := make([]float32, len(test.Examples))
		for i, e := range test.Examples {
			probs[i] = float32(1 / (1 + math.Exp(-w.logit(e, hp, idfTok, idfBi)-shift)))
		}
		return BinaryMetrics(probs, labelsOf(test.Examples), 0.5)["f1"]
	}
	if raw, cal := f1At(0), f1At(shifts[0]); cal < raw+0.05 {
		t.Errorf("test F1 %.3f calibrated vs %.3f raw: want a gain of at least 0.05", cal, raw)
	} else {
		t.Logf("shift %+.2f: test F1 %.3f calibrated vs %.3f raw", shifts[0], cal, raw)
	}

	for _, folds := range []int{1, 61} {
		if _, err := lexicalCalibration(hp, tc, train, folds, 1); err == nil {
			t.Errorf("%d inner folds over 60 abstracts: no error", folds)
		}
	}
}

func TestContextFeatures(t *testing.T) {
	// One instance of 3 sentences given out of order, and a one-sentence instance.
	keys := []RowKey{{"1", "a", 2}, {"1", "a", 0}, {"1", "a", 1}, {"2", "a", 0}}
	logits := []float64{-1, 2, 0.5, -3}
	want := [][NumContextFeatures]float64{
		{-1, -3, 0, 2, 0.5, contextPad},
		{2, 0, 1, 2, contextPad, 0.5},
		{0.5, -1.5, 0, 2, 2, -1},
		{-3, 0, 1, -3, contextPad, contextPad},
	}
	got := contextFeatures(logits, keys)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// contextData builds instances of 8 sentences where the relevant sentences are a pair (j, j+1):
// the first-stage logit of j is high, that of j+1 lies among the irrelevant ones' (-3 to -1.6).
// Alone, a sentence-level cut cannot find j+1; the neighbour's logit can.
func contextData(instances int, prefix string) ([]float64, []Example, []RowKey) {
	var logits []float64
	var exs []Example
	var keys []RowKey
	for d := range instances {
		j := d % 6
		for i := range 8 {
			z, label := -3+0.35*float64((d*7+i)%5), float32(0)
			switch i {
			case j:
				z, label = 2, 1
			case j + 1:
				z, label = -2.5+0.1*float64(d%3), 1
			}
			logits = append(logits, z)
			exs = append(exs, Example{Aspect: 0, Label: label})
			keys = append(keys, RowKey{PMID: fmt.Sprintf("%s%d", prefix, d), Aspect: "a", SentenceIndex: i})
		}
	}
	return logits, exs, keys
}

func TestContextRescorer(t *testing.T) {
	logits, exs, keys := contextData(60, "t")
	c := fitContextRescorer(logits, exs, keys, 1, 0.5)
	testLogits, testExs, testKeys := contextData(30, "u")
	probs, err := c.Rescore(testLogits, testExs, testKeys)
	if err != nil {
		t.Fatal(err)
	}
	shifted := make([]float32, len(testLogits))
	shift := bestShifts(logits, exs, 1, 0.5)[0]
	for i, z := range testLogits {
		shifted[i] = float32(sigmoid(z + shift))
	}
	labels := labelsOf(testExs)
	got, base := BinaryMetrics(probs, labels, 0.5)["f1"], BinaryMetrics(shifted, labels, 0.5)["f1"]
	if got < 0.95 || got < base+0.1 {
		t.Errorf("rescored test F1 %.3f, shifted first stage %.3f: want >= 0.95 and a gain of 0.1", got, base)
	}
	t.Logf("rescored test F1 %.3f, shifted first stage %.3f", got, base)
	if _, err := c.Rescore(testLogits[:3], testExs, testKeys); err == nil {
		t.Error("Rescore with fewer logits than rows: no error")
	}
	if _, err := c.Rescore(testLogits[:1], []Example{{Aspect: 3}}, testKeys[:1]); err == nil {
		t.Error("Rescore of an unknown aspect: no error")
	}
}

// lexicalCalibration is the warm start's calibration as Train computes it: bestShifts of the
// lexical regression's out-of-fold logits on train.
func lexicalCalibration(hp *Hyperparams, tc config.Tracker, train SplitData, folds int, seed int64) ([]float64, error) {
	logits, err := lexicalOOF(hp, tc, train, folds, seed)
	if err != nil {
		return nil, err
	}
	return bestShifts(logits, train.Examples, len(hp.Aspects), tc.Threshold), nil
}

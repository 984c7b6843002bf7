package summarizer

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/tracksum/tracksum/config"
	tsmodel "github.com/tracksum/tracksum/model"
)

// copyTask makes examples whose summary is "12 13" followed by the rare tokens of the cited
// sentence (ids >= 30) in order: the model must learn a fixed phrase and to copy tokens that each
// occur only a few times in training, which is what the copy mechanism is for.
func copyTask(h Hyperparams, n int, seed uint64) []Example {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []Example
	for range n {
		var sent, tgt []int32
		for range 6 + rng.IntN(5) {
			if rng.IntN(3) == 0 {
				tok := int32(30 + rng.IntN(h.VocabSize-30))
				sent = append(sent, tok)
				tgt = append(tgt, tok)
			} else {
				sent = append(sent, int32(10+rng.IntN(10)))
			}
		}
		summary := append([]int32{12, 13}, tgt...)
		out = append(out, MakeExample(h, []int32{5, 6}, [][]int32{sent}, nil, summary, detokIDs(summary)))
	}
	return out
}

func TestTinyModelLearnsCopyTask(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model for ~20 s; skipped with -short")
	}
	backend, _, err := tsmodel.Backend()
	if err != nil {
		t.Fatal(err)
	}
	h := Hyperparams{VocabSize: 200, DModel: 32, Heads: 2, FFNDim: 64, EncoderLayers: 1, DecoderLayers: 1,
		MaxSourceLen: 32, MaxSummaryLen: 12, PadID: 0, BosID: 1, EosID: 2, SepID: 3, CtxID: 4}
	// The output softmax covers only the fixed phrase and [EOS]: the rare tokens can only be copied.
	h.GenIDs = []int32{h.EosID, 12, 13}
	train, dev := copyTask(h, 256, 1), copyTask(h, 32, 2)
	loop := config.DefaultTrainLoop()
	loop.Epochs, loop.BatchSize, loop.WarmupSteps, loop.LearningRate, loop.Patience = 15, 16, 20, 3e-3, 0
	res, err := TrainExamples(context.Background(), ExamplesOptions{
		Backend: backend, Hyperparams: h, Loop: loop, Seed: 1, OutDir: t.TempDir(), Train: train, Dev: dev,
		Suppress: []int32{0, 1, 3, 4}, Detok: detokIDs, Log: testLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("best dev: %v at step %d (%s)", res.Best, res.BestStep, res.Stop)
	// Chance level: a fixed guess "12 13" scores ROUGE-L F around 0.4 on these references; the
	// rare tokens are only reachable by copying.
	if res.Best["rougeL"] < 0.8 {
		t.Errorf("dev ROUGE-L F = %.3f, want >= 0.8", res.Best["rougeL"])
	}
}

// detokIDs writes ids as space-separated words, so that ROUGE compares tokens.
func detokIDs(ids []int32) string {
	b := []byte{}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, 'w')
		b = append(b, []byte(string(rune('a'+id/26)))...)
		b = append(b, []byte(string(rune('a'+id%26)))...)
	}
	return string(b)
}

// testLog shows the training progress with -v only.
func testLog(t *testing.T) io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}

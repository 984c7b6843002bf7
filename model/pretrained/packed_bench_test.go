package pretrained

import (
	"context"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/training"
)

// realDev is the real development data (../shared, never copied into the repository).
var realDev = filepath.Join("..", "..", "..", "shared", "data", "tracsum", "tracsum-dev.jsonl")

// estTokens estimates the Llama 3 token count of text: a byte-level BPE of about 4 bytes a token
// on English text (the tokenizer itself is fetched, not committed; docs/pretrained.md states the
// estimate with the figures).
func estTokens(text string) int { return (len(text) + 3) / 4 }

// chatOverhead is the tokens Llama 3.1's chat template adds around a prompt's messages (its
// default system turn with the dates, the role headers, the assistant header).
const chatOverhead = 30

// realLengths returns the (prompt, answer) token counts of the tracker's (sentence, aspect) pairs
// and of the summarizer's Track-then-Sum prompts on the real dev data, estimated with estTokens,
// capped to max_seq_len as the prompters fit them.
func realLengths(b *testing.B) (tracker, summarizer [][2]int) {
	if _, err := os.Stat(realDev); err != nil {
		b.Skipf("real data absent (%v): the benchmark reads the prompt lengths of ../shared/data/tracsum", err)
	}
	insts, err := dataset.ReadInstances(realDev)
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	const answerTurn = 5 // "Relevance: Yes." and the end of turn
	for _, in := range insts {
		for _, s := range in.Document {
			msgs := TrackerMessages(s, AspectName("", in.Aspect))
			p := min(chatOverhead+estTokens(msgs[0].Content), cfg.Tracker.MaxSeqLen-answerTurn)
			tracker = append(tracker, [2]int{p, answerTurn})
		}
		msgs := SummarizerMessages("", in.Aspect, in.Sentences, nil)
		a := estTokens(SummarizerAnswer(in.Summary)) + 1
		p := min(chatOverhead+estTokens(msgs[0].Content)+estTokens(msgs[1].Content), cfg.Summarizer.MaxSeqLen-a)
		summarizer = append(summarizer, [2]int{p, a})
	}
	return tracker, summarizer
}

// BenchmarkPackedStep measures a LoRA training step's real tokens per second (forward, loss and
// adapter gradients) of padded batches and of the same batches packed (TASK.train.packing), on a
// random 4-layer Llama (hidden 256, 8 heads, 4 key/value heads, rank 16 on every projection), with
// the real dev data's prompt and answer lengths: the tracker's 32 examples of max_seq_len 128 and
// the summarizer's 16 of max_seq_len 2,048, as configs/default.yaml. Each step runs one of 4
// batches drawn at random from the lengths (their graphs compiled before the timing):
//
//	go test ./model/pretrained -run '^$' -bench PackedStep -benchtime 8x
func BenchmarkPackedStep(b *testing.B) {
	trackerLens, summarizerLens := realLengths(b)
	dir := filepath.Join(b.TempDir(), "llm")
	if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 2000, Hidden: 256, Layers: 4, Heads: 8, KVHeads: 4, Intermediate: 704, Seed: 3}); err != nil {
		b.Fatal(err)
	}
	snap, err := snapshot.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	backend, _, err := model.Backend()
	if err != nil {
		b.Fatal(err)
	}
	lm, err := loadCausalLM(context.Background(), backend, snap, config.LoRA{Rank: 16, Alpha: 16, RSLoRA: true}, 1, false, computeSettings{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	for _, task := range []struct {
		name       string
		lens       [][2]int
		batch, max int
	}{
		{"tracker", trackerLens, cfg.Tracker.Train.BatchSize, cfg.Tracker.MaxSeqLen},
		{"summarizer", summarizerLens, cfg.Summarizer.Train.BatchSize, cfg.Summarizer.MaxSeqLen},
	} {
		r := rand.New(rand.NewPCG(11, 3))
		var batches [][]Example
		for range 4 {
			var exs []Example
			for range task.batch {
				l := task.lens[r.IntN(len(task.lens))]
				prompt, answer := make([]int32, l[0]), make([]int32, l[1])
				for i := range prompt {
					prompt[i] = int32(1 + r.IntN(1999))
				}
				for i := range answer {
					answer[i] = int32(1 + r.IntN(1999))
				}
				exs = append(exs, AnswerExample(prompt, answer))
			}
			batches = append(batches, exs)
		}
		sh := packShape{rowLen: model.BucketLen(task.max, seqBucket)}
		for _, exs := range batches {
			sh = sh.fit(exs)
		}
		for _, mode := range []struct {
			name  string
			build func([]Example) training.Batch
			loss  func(*gomlxmodel.Scope, []*Node) *Node
		}{
			{"padded", func(exs []Example) training.Batch { return answerBatch(exs, 0, 0) }, lm.answerLoss},
			{"packed", func(exs []Example) training.Batch { return packedBatch(exs, 0, sh, false) }, lm.packedAnswerLoss},
		} {
			b.Run(task.name+"/"+mode.name, func(b *testing.B) {
				vars := lm.dec.LoRAVariables()
				exec, err := gomlxmodel.NewExec(backend, lm.store, func(scope *gomlxmodel.Scope, in []*Node) []*Node {
					loss := mode.loss(scope, in)
					var wrt []*Node
					for _, k := range slices.Sorted(maps.Keys(vars)) {
						wrt = append(wrt, vars[k].ValueGraph(loss.Graph()))
					}
					return append([]*Node{loss}, Gradient(loss, wrt...)...)
				})
				if err != nil {
					b.Fatal(err)
				}
				exec.SetMaxCache(-1)
				built := make([]training.Batch, len(batches))
				for i, exs := range batches {
					built[i] = mode.build(exs)
					if _, err := exec.Call(built[i].Inputs...); err != nil { // compile
						b.Fatal(err)
					}
				}
				tokens, slots := 0, 0
				t0 := time.Now()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					bt := built[i%len(built)]
					if _, err := exec.Call(bt.Inputs...); err != nil {
						b.Fatal(err)
					}
					tokens += bt.Tokens
					slots += bt.Inputs[0].(*tensors.Tensor).Shape().Size()
				}
				b.ReportMetric(float64(tokens)/time.Since(t0).Seconds(), "tokens/s")
				b.ReportMetric(float64(tokens)/float64(slots), "real/slots")
			})
		}
	}
}

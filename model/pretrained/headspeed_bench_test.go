package pretrained_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/pretrained/pretrainedtest"
)

// BenchmarkTrackerHead trains the tiny random snapshot's tracker (pretrainedtest: hidden 16, one
// layer, vocab 128,256 with the fetched Llama 3.1 tokenizer) for 4 steps of 8 examples with each
// causal-LM head and reports the training throughput (graph compilation included, evaluation
// excluded) as examples/s, and over the steady steps 2 to 4 per second and per CPU-second. The generative head used to train at a tenth of lm_cls's speed (issue
// 33 item 6):
//
//	go test ./model/pretrained -run '^$' -bench TrackerHead -benchtime 1x
func BenchmarkTrackerHead(b *testing.B) {
	for _, head := range []string{config.HeadGenerative, config.HeadLMCLS} {
		b.Run(head, func(b *testing.B) {
			var eps, steadyWall, steadyCPU float64
			steady := 0
			for range b.N {
				// The steady steps (2 to 4: the first compiles the graph), by the wall clock and by
				// this process's CPU time, which a loaded machine does not inflate.
				var w0 time.Time
				var c0 float64
				pretrained.SetAfterStep(func(step int) {
					switch step {
					case 1:
						w0, c0 = time.Now(), pretrained.ProcessCPUSeconds()
					case 4:
						steadyWall += time.Since(w0).Seconds()
						steadyCPU += pretrained.ProcessCPUSeconds() - c0
						steady += 3 * 8
					}
				})
				cfg, data, llm := pretrainedtest.Setup(b)
				cfg.Tracker.Pretrained, cfg.Tracker.Head = llm, head
				cfg.Tracker.LoRA.Rank, cfg.Tracker.LoRA.Alpha = 4, 8
				cfg.Tracker.LoRA.TargetModules = []string{"q_proj", "v_proj"}
				l := &cfg.Tracker.Train
				l.MaxSteps, l.BatchSize, l.EvalEvery, l.WarmupSteps, l.LearningRate, l.GradAccumulation = 4, 8, 4, 0, 1e-2, 1
				ck := filepath.Join(b.TempDir(), "tracker")
				if err := pretrained.TrainTracker(b.Context(), cfg, data, ck, pretrained.TrainOptions{Log: pretrainedtest.Log()}); err != nil {
					b.Fatal(err)
				}
				var rep pretrained.Report
				if err := atomicio.ReadJSON(filepath.Join(ck, checkpoint.ReportFile), &rep, false); err != nil {
					b.Fatal(err)
				}
				eps += rep.ExamplesPerSec
			}
			pretrained.SetAfterStep(nil)
			b.ReportMetric(eps/float64(b.N), "examples/s")
			b.ReportMetric(float64(steady)/steadyWall, "steady-examples/s")
			b.ReportMetric(float64(steady)/steadyCPU, "steady-examples/CPU-s")
		})
	}
}

package pretrained_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/variant"
)

// TestNF4Variants is issue 32 item 4 for the Table 6 variants: SUM-THEN-TRACK and END-TO-END on
// a QLoRA base (a plain snapshot quantized to NF4 when loaded), trained 3 steps each; every part's
// manifest records the quantization, and tracksum-infer --method stt|ete runs the checkpoints.
func TestNF4Variants(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four tiny models (-short)")
	}
	cfg, data := variantConfig(t)
	cfg.Summarizer.Train.Quantization = config.QuantizationNF4
	cfg.Tracker.Train.Quantization = config.QuantizationNF4
	root := t.TempDir()
	cases := []struct {
		task, method string
		parts        []string
	}{
		{variant.SumThenTrack, infer.MethodSTT, []string{checkpoint.VariantSummarizerDir, checkpoint.VariantTrackerDir}},
		{variant.EndToEnd, infer.MethodETE, []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.task, func(t *testing.T) {
			ck := filepath.Join(root, tc.task)
			trainTask(t, tc.task, cfg, data, ck)
			for _, part := range tc.parts {
				m, err := checkpoint.Open(context.Background(), filepath.Join(ck, part))
				if err != nil {
					t.Fatal(err)
				}
				if m.Backbone.Quantization != config.QuantizationNF4 {
					t.Errorf("%s/%s: backbone quantization %q, want nf4", tc.task, part, m.Backbone.Quantization)
				}
			}
			docs := docLengths(t, data, "test")
			preds := runInfer(t, cfg, data, infer.Options{Method: tc.method, Model: ck})
			if len(preds) == 0 {
				t.Fatal("no predictions")
			}
			for _, p := range preds {
				checkIndexes(t, p, docs[p.PMID])
			}
		})
	}
}

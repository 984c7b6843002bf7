package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/internal/cli"
)

// nliSnapshot writes a tiny random RoBERTa NLI snapshot whose classifier bias makes one label win
// whatever the input: entailment when entail is true, contradiction otherwise.
func nliSnapshot(t *testing.T, entail bool) string {
	return nliSnapshotOf(t, "roberta", entail)
}

// nliSnapshotOf is nliSnapshot of a model type (roberta or deberta-v2).
func nliSnapshotOf(t *testing.T, modelType string, entail bool) string {
	t.Helper()
	dir := t.TempDir()
	bias := []float32{6, 0, 0}
	if entail {
		bias = []float32{0, 0, 6}
	}
	prefix := map[string]string{"roberta": "roberta.", "deberta-v2": "deberta."}[modelType]
	if err := randsnap.WriteEncoder(dir, randsnap.Encoder{ModelType: modelType, Prefix: prefix, Vocab: 300, Hidden: 16,
		Layers: 1, Heads: 2, Intermediate: 32, MaxPositions: 258, Seed: 3,
		Labels: []string{"CONTRADICTION", "NEUTRAL", "ENTAILMENT"}, HeadBias: bias}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEvaluationWithNLIJudge: --judge nli scores through the evaluation, records its settings,
// follows the model's verdict (a model that always entails gives claim F1 1 for references
// against themselves; one that never does, less), and `eval compare` takes it too.
func TestEvaluationWithNLIJudge(t *testing.T) {
	cfg := testConfig().Eval
	cfg.Judge = "nli"
	cfg.NLI.CacheDir = t.TempDir()
	cfg.NLI.Model = nliSnapshot(t, true)
	out, err := Evaluation(context.Background(), "testdata/ref.jsonl", "testdata/ref.jsonl", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.Report.Settings.Judge, "nli:") || out.Report.Settings.NLI == nil ||
		out.Report.Settings.NLI.Threshold != 0.5 || len(out.Report.Settings.NLI.WeightsSHA256) != 64 ||
		len(out.Report.Settings.NLI.ModelSHA256) != 64 || out.Report.Settings.NLI.ModelSHA256 == out.Report.Settings.NLI.WeightsSHA256 ||
		len(out.Report.Settings.NLI.Files["config.json"]) != 64 || len(out.Report.Settings.NLI.Files["tokenizer.json"]) != 64 {
		t.Fatalf("settings %+v, nli %+v", out.Report.Settings, out.Report.Settings.NLI)
	}
	if got := out.Report.Overall.Mean[ClaimF1]; got != 1 {
		t.Errorf("an always-entailing model: claim F1 %v, want 1", got)
	}
	cfg.NLI.Model = nliSnapshot(t, false)
	out, err = Evaluation(context.Background(), "testdata/ref.jsonl", "testdata/ref.jsonl", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Report.Overall.Mean[ClaimF1]; got >= 1 {
		t.Errorf("a never-entailing model: claim F1 %v, want < 1", got)
	}
	if _, err := Compare(context.Background(), "testdata/pred.jsonl", "testdata/ref.jsonl", "testdata/ref.jsonl", cfg); err != nil {
		t.Errorf("compare with the nli judge: %v", err)
	}
	cfg.NLI.Model = ""
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "eval.nli.model") {
		t.Errorf("judge nli without a model: %v", err)
	}
}

// TestNLICommandAndAgreement: `tracksum-eval --judge nli --nli-model DIR --out OUT`, then
// `tracksum-eval agreement` on its instances.jsonl.
func TestNLICommandAndAgreement(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	t.Setenv("TRACKSUM_EVAL_NLI_CACHE_DIR", t.TempDir())
	cmd := Command()
	if err := cmd.Flags.Parse([]string{"--pred", "testdata/pred.jsonl", "--ref", "testdata/ref.jsonl", "--judge", "nli",
		"--nli-model", nliSnapshot(t, true), "--out", out}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(context.Background(), cmd.Flags.Args()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(out, "instances.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var human strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for i := 0; sc.Scan(); i++ {
		var line struct {
			PMID   string `json:"PMID"`
			Aspect string `json:"Aspect"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&human, `{"PMID": %q, "Aspect": %q, "claim_recall": %d, "citation_precision": %d}`+"\n", line.PMID, line.Aspect, i%4, (i*3)%5)
	}
	hp := filepath.Join(t.TempDir(), "human.jsonl")
	if err := os.WriteFile(hp, []byte(human.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, err := Agreement(filepath.Join(out, "instances.jsonl"), hp)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) == 0 {
		t.Fatal("no correlation")
	}
}

// TestNLICommandDeberta: `tracksum-eval --judge nli --nli-model DIR` on a random DeBERTa-v3-shaped
// snapshot (hf/randsnap's deberta-v2, a Unigram tokenizer) follows the model's verdict.
func TestNLICommandDeberta(t *testing.T) {
	for _, entail := range []bool{true, false} {
		out := filepath.Join(t.TempDir(), "out")
		t.Setenv("TRACKSUM_EVAL_NLI_CACHE_DIR", t.TempDir())
		cmd := Command()
		if err := cmd.Flags.Parse([]string{"--pred", "testdata/ref.jsonl", "--ref", "testdata/ref.jsonl", "--judge", "nli",
			"--nli-model", nliSnapshotOf(t, "deberta-v2", entail), "--out", out}); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Run(context.Background(), cmd.Flags.Args()); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Overall map[string]any `json:"overall"`
		}
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		got, ok := rep.Overall[ClaimF1.String()].(float64)
		if !ok || (entail && got != 1) || (!entail && got >= 1) {
			t.Errorf("entailing model %v: claim F1 %v (present %v), want 1 for an always-entailing model, less otherwise", entail, got, ok)
		}
	}
}

// TestNLIModelNeedsNLIJudge (issue 35 item 18): `--judge lexical --nli-model DIR` ignored the
// snapshot silently. --nli-model with another judge than nli is a usage error, in eval and
// compare; with --judge nli it is taken.
func TestNLIModelNeedsNLIJudge(t *testing.T) {
	for _, tc := range []struct {
		desc string
		cmd  func() cli.Command
		args []string
	}{
		{"eval, lexical by default", Command, []string{"--pred", "testdata/ref.jsonl", "--ref", "testdata/ref.jsonl"}},
		{"eval, --judge lexical", Command, []string{"--pred", "testdata/ref.jsonl", "--ref", "testdata/ref.jsonl", "--judge", "lexical"}},
		{"compare, --judge lexical", CompareCommand, []string{"testdata/pred.jsonl", "testdata/ref.jsonl", "--ref", "testdata/ref.jsonl", "--judge", "lexical"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cmd := tc.cmd()
			if err := cmd.Flags.Parse(append(tc.args, "--nli-model", t.TempDir())); err != nil {
				t.Fatal(err)
			}
			err := cmd.Run(context.Background(), cmd.Flags.Args())
			if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "--nli-model") || !strings.Contains(err.Error(), "--judge nli") {
				t.Errorf("err = %v, want a usage error naming --nli-model and --judge nli", err)
			}
		})
	}
}

package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// TestNames pins the on-disk names: checkpoints trained before any rename must still load.
func TestNames(t *testing.T) {
	for _, tc := range []struct{ desc, got, want string }{
		{"tracker metadata", HyperparamsFile, "hparams.json"},
		{"summarizer metadata", SummarizerFile, "summarizer.json"},
		{"tokenizer", TokenizerFile, "tokenizer.json"},
		{"config", ConfigFile, "config.yaml"},
		{"report", ReportFile, "report.json"},
		{"metrics", MetricsFile, "metrics.jsonl"},
		{"plot", PlotFile, "curves.png"},
		{"best weights", BestWeights("ck"), filepath.Join("ck", "best", "model.safetensors")},
		{"state", StateDir, "state"},
		{"best metrics", BestMetricsFile, "metrics.json"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.desc, tc.got, tc.want)
		}
	}
}

func TestWriteAndRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	type meta struct {
		A int `json:"a"`
	}
	tok := []byte(`{"model": {}}`)
	cfg := config.Default()
	if err := Write(dir, Files{MetaFile: HyperparamsFile, Meta: meta{A: 3}, Tokenizer: tok, Config: &cfg}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, HyperparamsFile)); string(b) != "{\n  \"a\": 3\n}\n" {
		t.Errorf("%s = %q", HyperparamsFile, b)
	}
	if y, _ := os.ReadFile(filepath.Join(dir, ConfigFile)); !strings.Contains(string(y), "seed:") {
		t.Errorf("%s lacks the config: %q", ConfigFile, y)
	}
	if !SameTokenizer(dir, tok) || SameTokenizer(dir, []byte("{}")) || SameTokenizer(t.TempDir(), tok) {
		t.Error("SameTokenizer: wrong answer")
	}
	var m meta
	if err := atomicio.ReadJSON(filepath.Join(dir, HyperparamsFile), &m, true); err != nil || m.A != 3 {
		t.Errorf("ReadJSON: %+v, %v", m, err)
	}
	os.WriteFile(filepath.Join(dir, "extra.json"), []byte(`{"a": 1, "b": 2}`), 0o644)
	if err := atomicio.ReadJSON(filepath.Join(dir, "extra.json"), &m, true); err == nil || !strings.Contains(err.Error(), "extra.json") {
		t.Errorf("strict ReadJSON of an unknown field: %v, want an error naming the file", err)
	}
	if err := atomicio.ReadJSON(filepath.Join(dir, "extra.json"), &m, false); err != nil || m.A != 1 {
		t.Errorf("lenient ReadJSON: %+v, %v", m, err)
	}
	if err := Write(dir, Files{MetaFile: HyperparamsFile, Meta: meta{}}); err == nil {
		t.Error("Write without tokenizer and config: no error")
	}
}

package pretrained

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/training"
)

// TestReadMetaQuantization: pretrained.json's quantization is nf4 or absent; any other value (a
// later release's, or an edit) is refused in one line rather than loaded as an unquantized base,
// which would run the adapters on weights other than those they were trained on.
func TestReadMetaQuantization(t *testing.T) {
	for _, tc := range []struct {
		desc, quantization, err string
	}{
		{"none", "", ""},
		{"nf4", config.QuantizationNF4, ""},
		{"fp4", "fp4", `quantization "fp4", want nf4 or none (absent)`},
		{"none spelled out", config.QuantizationNone, `quantization "none"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			if err := checkpoint.WriteJSON(filepath.Join(dir, checkpoint.PretrainedFile), Meta{Task: dataset.TaskTracker, Quantization: tc.quantization}); err != nil {
				t.Fatal(err)
			}
			m, err := ReadMeta(dir)
			switch {
			case tc.err == "" && (err != nil || m.Quantization != tc.quantization):
				t.Errorf("ReadMeta = %+v, %v", m, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n")):
				t.Errorf("ReadMeta: err %v, want one line with %q", err, tc.err)
			}
		})
	}
}

// TestResumeRefusesOtherQuantization: continuing a checkpoint in --out with another
// train.quantization (past --allow-changed-config's check of config.yaml) is refused naming
// both, before anything of the directory is rewritten.
func TestResumeRefusesOtherQuantization(t *testing.T) {
	for _, tc := range []struct{ desc, was, now, want string }{
		{"nf4 then none", config.QuantizationNF4, "", "was trained on a base held as nf4, this run's is none (tracker.train.quantization, --quantize); rerun with --quantize nf4"},
		{"none then nf4", "", config.QuantizationNF4, "was trained on a base held as none, this run's is nf4 (tracker.train.quantization, --quantize); rerun with --quantize none"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			old := Meta{Task: dataset.TaskTracker, Head: config.HeadGenerative, Quantization: tc.was}
			if err := checkpoint.WriteJSON(filepath.Join(dir, checkpoint.PretrainedFile), old); err != nil {
				t.Fatal(err)
			}
			meta := old
			meta.Quantization = tc.now
			cfg := config.Default()
			err := prepareDir(context.Background(), dir, &meta, nil, &cfg, "", true, &strings.Builder{})
			if err == nil || !errors.Is(err, training.ErrResume) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err %v, want one line wrapping ErrResume with %q", err, tc.want)
			}
		})
	}
}

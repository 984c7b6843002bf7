package cv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
)

// TestModelRecordIgnoresOtherSections: a model's record changes with its own section and the
// shared ones, never with another section, whatever its value or default.
func TestModelRecordIgnoresOtherSections(t *testing.T) {
	base := config.Default()
	rec := func(c config.Config, section string) []byte {
		t.Helper()
		r, err := modelRecord(&c, section, onlySection(&c, section))
		if err != nil {
			t.Fatal(err)
		}
		return r.YAML
	}
	tests := []struct {
		desc    string
		section string
		change  func(*config.Config)
		same    bool
	}{
		{"tracker: another summarizer", "tracker", func(c *config.Config) { c.Summarizer = config.Summarizer{} }, true},
		{"tracker: another eval and infer", "tracker", func(c *config.Config) { th := 0.3; c.Eval, c.Infer = config.Eval{}, config.Infer{Threshold: &th} }, true},
		{"tracker: another variants section", "tracker", func(c *config.Config) { c.Variants.MaxSourceLen++ }, true},
		{"tracker: its own threshold", "tracker", func(c *config.Config) { c.Tracker.Threshold = 0.4 }, false},
		{"tracker: the seed", "tracker", func(c *config.Config) { c.Seed++ }, false},
		{"summarizer: another tracker", "summarizer", func(c *config.Config) { c.Tracker = config.Tracker{} }, true},
		{"summarizer: its training steps", "summarizer", func(c *config.Config) { c.Summarizer.Train.MaxSteps++ }, false},
		// Pretrained models only: a cross-validation trains from scratch (records written before
		// these keys existed stay valid).
		{"tracker: precision and checkpointing", "tracker", func(c *config.Config) {
			c.Tracker.Train.Precision, c.Tracker.Train.GradientCheckpointing = config.PrecisionBF16, true
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			changed := base
			tc.change(&changed)
			if got := bytes.Equal(rec(base, tc.section), rec(changed, tc.section)); got != tc.same {
				t.Errorf("records equal = %v, want %v", got, tc.same)
			}
		})
	}
	y := string(rec(base, "tracker"))
	for _, key := range []string{"seed:", "prepare:", "tokenizer:", "tracker:"} {
		if !strings.Contains(y, key) {
			t.Errorf("tracker record lacks %s:\n%s", key, y)
		}
	}
	if strings.Contains(y, "precision:") || strings.Contains(y, "gradient_checkpointing:") {
		t.Errorf("tracker record holds the pretrained models' compute keys:\n%s", y)
	}
	if strings.Contains(y, "summarizer:") || strings.Contains(y, "eval:") {
		t.Errorf("tracker record holds another section:\n%s", y)
	}
}

// TestSettingsLegacyRecord: a directory recorded by an earlier build (the legacy record) is
// accepted and its record rewritten; another record is still refused.
func TestSettingsLegacyRecord(t *testing.T) {
	cfg := tinyConfig(t)
	data := preparedWithFolds(t, cfg, 3)
	out := t.TempDir()
	settings := map[string]any{"model": "tracker", "dev_share": DefaultDevShare}
	rec, err := trackerRecord(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The earlier build's record.
	if err := checkSettingsOf(out, data, settings, configRecord{YAML: rec.Legacy}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(out, SettingsFile))
	if err := checkSettingsOf(out, data, settings, rec); err != nil {
		t.Fatalf("legacy record refused: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(out, SettingsFile))
	if bytes.Equal(before, after) {
		t.Error("legacy record not rewritten")
	}
	if y, _ := os.ReadFile(filepath.Join(out, "config.yaml")); !bytes.Equal(y, rec.YAML) {
		t.Error("config.yaml is not the new record")
	}
	if err := checkSettingsOf(out, data, settings, rec); err != nil {
		t.Errorf("rewritten record refused: %v", err)
	}
	other := *cfg
	other.Tracker.Threshold = 0.4
	orec, err := trackerRecord(&other)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSettingsOf(out, data, settings, orec); !errors.Is(err, ErrSettings) {
		t.Errorf("another tracker setting: got %v, want ErrSettings", err)
	}
}

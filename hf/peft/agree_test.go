package peft

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// TestCheckAgreement: adapter_config.json must describe the adapter the metadata records (issue
// 22: an edited lora_alpha changed the export but not inference).
func TestCheckAgreement(t *testing.T) {
	l := config.LoRA{Rank: 4, Alpha: 8, RSLoRA: true, TargetModules: []string{"q_proj", "v_proj"}}
	for _, tc := range []struct {
		desc string
		edit func(c *Config)
		meta func(l *config.LoRA)
		want string // "" = agreement
	}{
		{desc: "same adapter"},
		{desc: "targets in another order", edit: func(c *Config) { c.TargetModules = []string{"v_proj", "q_proj"} }},
		{desc: "lora_alpha edited", edit: func(c *Config) { c.LoRAAlpha = 1000 }, want: "has lora_alpha 1000 but"},
		{desc: "r edited", edit: func(c *Config) { c.R = 8 }, want: "has r 8 but"},
		{desc: "use_rslora edited", edit: func(c *Config) { c.UseRSLoRA = false }, want: "has use_rslora false but"},
		{desc: "a BERT classifier's targets, written as the BERT layers", edit: func(c *Config) {
			c.ModulesToSave, c.TargetModules = []string{"classifier"}, []string{"query", "value"}
		}},
		{desc: "a decoder's targets as BERT layers", edit: func(c *Config) {
			c.TargetModules = []string{"query", "value"}
		}, want: "has target_modules"},
		{desc: "a target added", edit: func(c *Config) { c.TargetModules = append(c.TargetModules, "k_proj") }, want: "has target_modules"},
		{desc: "metadata says full fine-tuning", meta: func(l *config.LoRA) { l.Rank = 0 }, want: "records full fine-tuning"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ck := t.TempDir()
			c := NewConfig(l, TaskCausalLM, "base", nil)
			if tc.edit != nil {
				tc.edit(&c)
			}
			if err := os.MkdirAll(filepath.Join(ck, AdapterDir), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(ck, AdapterDir, ConfigFile), b, 0o644)
			meta := l
			if tc.meta != nil {
				tc.meta(&meta)
			}
			err = CheckAgreement(ck, atomicio.DirFiles(ck), meta, "pretrained.json")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (!errors.Is(err, ErrDisagree) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "pretrained.json")):
				t.Fatalf("err = %v, want ErrDisagree containing %q", err, tc.want)
			}
		})
	}
	dir := t.TempDir()
	if err := CheckAgreement(dir, atomicio.DirFiles(dir), config.LoRA{}, "pretrained.json"); err != nil {
		t.Errorf("full fine-tuning without adapter/: %v", err)
	}
}

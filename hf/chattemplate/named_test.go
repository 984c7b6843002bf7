package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestNamedGolden: the named templates render as Jinja2 renders their source under transformers'
// settings (testdata/named_golden.json, tools/chattemplate/named.py), and their source is the one
// the golden was made from (issue 36 item 2: the TracSum authors' llama-3 template, from
// Unsloth's source).
func TestNamedGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "named_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Templates []struct {
			Name, Source string
			BOS          string `json:"bos_token"`
			Cases        []struct {
				Name                string
				Messages            []Message
				AddGenerationPrompt bool `json:"add_generation_prompt"`
				Want                string
			}
		}
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Templates) != len(Names()) {
		t.Errorf("golden has %d templates, named.go %d", len(g.Templates), len(Names()))
	}
	for _, tpl := range g.Templates {
		source, ok := NamedSource(tpl.Name)
		if !ok || source != tpl.Source {
			t.Errorf("%s: named.go's source differs from the golden's", tpl.Name)
			continue
		}
		cfg, _ := json.Marshal(map[string]any{"bos_token": tpl.BOS, "eos_token": "<|eot_id|>", "chat_template": "{{ 'snapshot' }}"})
		cfg, err := WithTemplate("tokenizer_config.json", cfg, source)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := Parse("tokenizer_config.json", cfg, "default")
		if err != nil {
			t.Fatalf("%s: %v", tpl.Name, err)
		}
		if parsed.SpecialTokens["eos_token"] != "<|eot_id|>" {
			t.Errorf("%s: WithTemplate lost the special tokens: %v", tpl.Name, parsed.SpecialTokens)
		}
		for _, c := range tpl.Cases {
			got, err := parsed.Render(c.Messages, Options{AddGenerationPrompt: c.AddGenerationPrompt})
			if err != nil || got != c.Want {
				t.Errorf("%s / %s:\n got %q (err %v)\nwant %q", tpl.Name, c.Name, got, err, c.Want)
			}
		}
	}
}

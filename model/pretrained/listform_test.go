package pretrained

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// TestChatTemplateListForm: issue 22 rough edge. chat_template as a list of named templates, a
// valid tokenizer_config.json form, was refused by the tokenizer loader (the library types it as
// a string). Both the tokenizer and the chat template now load it: the entry named "default", or
// the only one.
func TestChatTemplateListForm(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "llm")
	if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 50, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 8, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, snapshot.TokenizerConfigFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	source := cfg["chat_template"].(string)
	for _, tc := range []struct {
		desc string
		list []map[string]string
	}{
		{"a default among others", []map[string]string{{"name": "tool_use", "template": "{{ raise_exception('not this one') }}"}, {"name": "default", "template": source}}},
		{"the only one", []map[string]string{{"name": "chatml", "template": source}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg["chat_template"] = tc.list
			data, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			chat, err := LoadChat(dir, []int{2}, 50)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(chat.Tpl.Source, "<|im_start|>") {
				t.Errorf("template %q, want the chatml one", chat.Tpl.Source)
			}
		})
	}
}

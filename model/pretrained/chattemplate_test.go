package pretrained

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/hf/snapshot"
)

// TestChatTemplateOverride: TASK.chat_template renders the prompts with the snapshot's template,
// a named one (llama-3: the TracSum authors', no date block) or a file's, the snapshot's special
// tokens kept (issue 36 item 2); anything else is one line naming the key.
func TestChatTemplateOverride(t *testing.T) {
	if !slices.Equal(config.ChatTemplateNames, chattemplate.Names()) {
		t.Errorf("config.ChatTemplateNames %v, hf/chattemplate's %v", config.ChatTemplateNames, chattemplate.Names())
	}
	dir := filepath.Join(t.TempDir(), "llm")
	if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 8, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	own, err := LoadChat(dir, []int{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tpl.jinja")
	if err := os.WriteFile(file, []byte("{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"), 0o644); err != nil {
		t.Fatal(err)
	}
	llama3, _ := chattemplate.NamedSource("llama-3")
	bos, _ := own.Tpl.SpecialTokens["bos_token"].(string)
	msgs := []chattemplate.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: " Summarize. "}}
	for _, tc := range []struct {
		value, source, want, err string
	}{
		{value: config.ChatTemplateSnapshot, source: own.Tpl.Source},
		{value: "llama-3", source: llama3, want: bos + "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>" +
			"<|start_header_id|>user<|end_header_id|>\n\nSummarize.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{value: file, want: "[system] Be brief.\n[user]  Summarize. \n"},
		{value: "llama-9", err: `summarizer.chat_template: "llama-9" is neither snapshot, a named template (llama-3) nor a readable template file`},
	} {
		src, err := chatTemplateSource("summarizer.chat_template", tc.value)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.value, err)
		}
		c, err := loadChat(dir, src, []int{2}, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.value, err)
		}
		if tc.source != "" && c.Tpl.Source != tc.source {
			t.Errorf("%s: template source %q, want %q", tc.value, c.Tpl.Source, tc.source)
		}
		if c.Tpl.SpecialTokens["bos_token"] != own.Tpl.SpecialTokens["bos_token"] {
			t.Errorf("%s: special tokens %v, want the snapshot's %v", tc.value, c.Tpl.SpecialTokens, own.Tpl.SpecialTokens)
		}
		if tc.want == "" {
			continue
		}
		got, err := c.Tpl.Render(msgs, chattemplate.Options{AddGenerationPrompt: true})
		if err != nil || got != tc.want {
			t.Errorf("%s: rendered %q (err %v), want %q", tc.value, got, err, tc.want)
		}
	}
}

// TestCheckpointKeepsChatTemplate: a model trained with another template than its base's keeps
// it in its checkpoint (pretrained.json's chat_template, and the tokenizer_config.json copy that
// inference renders).
func TestCheckpointKeepsChatTemplate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "llm")
	if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 8, Layers: 1, Heads: 2, Intermediate: 8, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	llama3, _ := chattemplate.NamedSource("llama-3")
	out := filepath.Join(t.TempDir(), "ck")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	meta := &Meta{Task: "summarizer", ModelType: "llama", AspectSet: "tracsum", MaxSeqLen: 64, ChatTemplate: "llama-3"}
	if err := prepareDir(context.Background(), out, meta, snap, &cfg, llama3, false, io.Discard); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMeta(out)
	if err != nil || got.ChatTemplate != "llama-3" {
		t.Errorf("pretrained.json chat_template %q (err %v), want llama-3", got.ChatTemplate, err)
	}
	c, err := LoadChat(out, []int{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tpl.Source != llama3 {
		t.Errorf("the checkpoint's template is %q, want llama-3's", c.Tpl.Source)
	}
}

package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// bertJSON is a tiny WordPiece tokenizer.json of our own in the BERT layout (BertNormalizer,
// BertPreTokenizer, TemplateProcessing [CLS] $A [SEP]), so that the WordPiece path is exercised
// without a real checkpoint.
const bertJSON = `{
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "[PAD]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 1, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 2, "content": "[CLS]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 3, "content": "[SEP]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
  ],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
    "pair": [],
    "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
  "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": false},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
    "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "dose": 4, "##s": 5, "were": 6, "low": 7, ".": 8, "5": 9, "-": 10, "fu": 11}}
}`

const bertConfig = `{"tokenizer_class": "BertTokenizer", "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]"}`

func writeSnapshot(t *testing.T, tokenizerJSON, config string) string {
	t.Helper()
	dir := t.TempDir()
	if tokenizerJSON != "" {
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tokenizerJSON), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestWordPiece(t *testing.T) {
	tok, err := Load(writeSnapshot(t, bertJSON, bertConfig))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Model != "WordPiece" || tok.Class != "BertTokenizer" {
		t.Errorf("Model %q Class %q", tok.Model, tok.Class)
	}
	for _, c := range []struct {
		text          string
		plain, framed []int
	}{
		{"Doses were LOW.", []int{4, 5, 6, 7, 8}, []int{2, 4, 5, 6, 7, 8, 3}},
		{"5-FU", []int{9, 10, 11}, []int{2, 9, 10, 11, 3}},
		{"unknown", []int{1}, []int{2, 1, 3}},
		{"", []int{}, []int{2, 3}},
	} {
		if got := tok.Encode(c.text, false); !slices.Equal(got, c.plain) {
			t.Errorf("Encode(%q, false) = %v, want %v", c.text, got, c.plain)
		}
		if got := tok.Encode(c.text, true); !slices.Equal(got, c.framed) {
			t.Errorf("Encode(%q, true) = %v, want %v", c.text, got, c.framed)
		}
	}
	// The decoder's cleanup is off here: the library ignores "cleanup": true (Hugging Face would
	// then write "low."), see docs/pretrained.md.
	if got, want := tok.Decode([]int{4, 5, 6, 7, 8}), "doses were low ."; got != want {
		t.Errorf("Decode = %q, want %q", got, want)
	}
}

// TestConcurrentEncode checks that encoding with and without special tokens from several
// goroutines gives the sequential results (the option is not shared state; go test -race).
func TestConcurrentEncode(t *testing.T) {
	tok, err := Load(writeSnapshot(t, bertJSON, bertConfig))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			special := i%2 == 0
			want := []int{4, 5}
			if special {
				want = []int{2, 4, 5, 3}
			}
			for range 100 {
				if got := tok.Encode("doses", special); !slices.Equal(got, want) {
					t.Errorf("Encode(doses, %v) = %v, want %v", special, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestLoadErrors(t *testing.T) {
	unigram := strings.Replace(bertJSON, `"type": "WordPiece", "unk_token"`, `"type": "Mystery", "unk_token"`, 1)
	for _, c := range []struct {
		name, tokenizerJSON, config string
		want                        string // regexp the one-line error must match
	}{
		{"no tokenizer.json", "", bertConfig, `tokenizer\.json: no such file`},
		{"no tokenizer_config.json", bertJSON, "", `tokenizer_config\.json: no such file`},
		{"malformed tokenizer.json", `{"model": `, bertConfig, `malformed JSON: .*tokenizer\.json:1:11: unexpected end of JSON input`},
		{"malformed tokenizer_config.json", bertJSON, `{"tokenizer_class": [`, `malformed JSON: .*tokenizer_config\.json:1:22: unexpected end of JSON input`},
		{"no model", `{"version": "1.0"}`, bertConfig, `tokenizer\.json: no "model" object`},
		{"unsupported model", unigram, bertConfig, `tokenizer\.json: unsupported tokenizer model type "Mystery" \(supported: BPE, Unigram, WordPiece\)`},
		{"no vocab", `{"model": {"type": "BPE"}}`, bertConfig, `tokenizer\.json: model has no vocab`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeSnapshot(t, c.tokenizerJSON, c.config)
			_, err := Load(dir)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			if !strings.Contains(msg, dir) || !regexp.MustCompile(c.want).MatchString(msg) {
				t.Errorf("error %q does not name the file and match %q", msg, c.want)
			}
			if c.name == "unsupported model" && !errors.Is(err, ErrUnsupported) {
				t.Errorf("error %v is not ErrUnsupported", err)
			}
		})
	}
}

// TestPieces checks the emulation of the Llama 3 pre-tokenizer regex's lookahead on texts where
// it decides the split; the expected pieces are what the original regex (Oniguruma, fancy-regex)
// yields.
func TestPieces(t *testing.T) {
	const llama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	re, err := translateRegex(llama3)
	if err != nil || re == nil {
		t.Fatalf("translateRegex: %v, %v", re, err)
	}
	s := &splitter{re: re}
	if re, err := translateRegex(`'s|\s+(?=x)`); re != nil || err != nil {
		t.Errorf("translateRegex accepted another lookahead: %v, %v", re, err)
	}
	for _, c := range []struct {
		text string
		want []string
	}{
		{"a   b", []string{"a", "  ", " b"}},
		{"a b", []string{"a", " b"}},
		{"a   ", []string{"a", "   "}},
		{"   a", []string{"  ", " a"}},
		{"a  \n  b", []string{"a", "  \n", " ", " b"}},
		{"x\t\ty", []string{"x", "\t", "\ty"}},
		{"1234567", []string{"123", "456", "7"}},
		{"a \u3000b", []string{"a", " ", "\u3000b"}},
		{"it'S ok", []string{"it", "'S", " ok"}},
		{"(a)/(b)", []string{"(a", ")/(", "b", ")"}},
		{"yes (a)", []string{"yes", " (", "a", ")"}},
		{"", nil},
	} {
		if got := s.pieces(c.text); !slices.Equal(got, c.want) {
			t.Errorf("pieces(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestByteLevel(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a b", "aĠb"},
		{"\n\t", "Ċĉ"},
		{"é", "Ã©"},
		{"\u00a0", "Âł"},
	} {
		if got := byteLevel(c.in); got != c.want {
			t.Errorf("byteLevel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestApplyFixesSequence(t *testing.T) {
	in := `{"post_processor": {"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "TemplateProcessing", "single": []}]}, "model": {}}`
	out, err := applyFixes([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"post_processor":{"type":"TemplateProcessing","single":[]}`) {
		t.Errorf("applyFixes = %s", out)
	}
	if _, err := applyFixes([]byte(`{"post_processor": {"type": "Sequence", "processors": [{"type": "Mystery"}]}}`)); err == nil {
		t.Error("unknown Sequence step accepted")
	}
	plain := `{"post_processor": {"type": "TemplateProcessing"}}`
	if out, err := applyFixes([]byte(plain)); err != nil || string(out) != plain {
		t.Errorf("applyFixes changed %s into %s (%v)", plain, out, err)
	}
}

// Package tokenizer loads the tokenizer of a local Hugging Face snapshot (tokenizer.json and
// tokenizer_config.json) and encodes text to token ids the way transformers'
// tokenizer(text, add_special_tokens=...) does, through the library
// github.com/gomlx/go-huggingface/tokenizers/hftokenizer. Nothing is downloaded.
//
// What this package adds around the library:
//   - one-line errors naming the file for a missing or malformed tokenizer.json or
//     tokenizer_config.json and for a model type the library does not implement;
//   - Encode with or without special tokens on one shared tokenizer, safe for concurrent use (the
//     library keeps the option in the tokenizer; here each setting has its own shallow copy);
//   - the fixes listed in fixes.go (and unigram.go: SentencePiece Unigram models), each for a
//     documented difference between the library and Hugging Face's tokenizers.
//
// Parity with Hugging Face is checked by testdata/golden.json: reference ids by
// @huggingface/tokenizers for the real tokenizers of Llama 3.1, Qwen3 and Gemma 3 on our own texts
// (see tools/hftokenizer). The real files are not committed (they are the model publishers'); the
// golden test skips a family whose files are absent. Known remaining differences are listed, with
// their cause, in golden_test.go and docs/pretrained.md.
package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gomlx/go-huggingface/tokenizers/api"
	"github.com/gomlx/go-huggingface/tokenizers/hftokenizer"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// SupportedModels are the tokenizer.json model types the library implements: WordPiece (BERT
// family), BPE (byte-level BPE of GPT-2/Llama 3/Qwen, and SentencePiece-converted BPE of Gemma) and
// Unigram (SentencePiece Unigram, e.g. T5).
var SupportedModels = []string{"BPE", "Unigram", "WordPiece"}

// ErrUnsupported is returned (wrapped, with the file name) for a tokenizer.json whose model type
// is not in SupportedModels.
var ErrUnsupported = errors.New("unsupported tokenizer model type")

// Tokenizer is the tokenizer of one snapshot. It is safe for concurrent use.
type Tokenizer struct {
	// Dir is the snapshot directory the tokenizer was loaded from.
	Dir string
	// Model is the tokenizer.json model type: one of SupportedModels.
	Model string
	// Class is tokenizer_config.json's tokenizer_class (e.g. "PreTrainedTokenizerFast",
	// "Qwen2Tokenizer", "GemmaTokenizer"); informative only.
	Class string
	// PostProcessor is tokenizer.json's post_processor type after the fixes ("TemplateProcessing",
	// "BertProcessing", "RobertaProcessing", or "" for none): a sentence pair's template depends
	// on it (RoBERTa's <s> A </s></s> B </s>).
	PostProcessor string

	// withSpecial and plain are shallow copies of one library tokenizer that differ only in
	// AddSpecialTokens: the library reads the option from the tokenizer, so one copy per setting
	// avoids mutating shared state. The copies share the (read-only) vocabulary maps.
	withSpecial, plain *hftokenizer.Tokenizer
	// split, when set, encodes instead of the library's pre-tokenizer (fixes.go, fix 2).
	split *splitter
	// fallback, when set, encodes instead of the library for byte_fallback models (fix 3).
	fallback *byteFallback
	// unigram, when set, encodes instead of the library for SentencePiece Unigram models (fix 4).
	unigram *unigramEncoder
	// maxID is the largest id of the vocabulary and added tokens, maxToken its token.
	maxID    int
	maxToken string
}

// tokenizerJSONHead is the part of tokenizer.json this package checks before handing the file to
// the library, which accepts any JSON object and fails later or silently.
type tokenizerJSONHead struct {
	Model *struct {
		Type  string          `json:"type"`
		Vocab json.RawMessage `json:"vocab"`
	} `json:"model"`
}

// Load reads dir/tokenizer.json and dir/tokenizer_config.json of a local snapshot.
func Load(dir string) (*Tokenizer, error) { return LoadFrom(atomicio.DirFiles(dir), dir) }

// LoadFrom is Load of the files of dir as files reads them (the directory, or the bytes a
// verified checkpoint manifest holds, so that they are not read again).
func LoadFrom(files atomicio.Files, dir string) (*Tokenizer, error) {
	tjPath := filepath.Join(dir, "tokenizer.json")
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	cfgData, err := files.ReadFile("tokenizer_config.json")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	// The library parses the file itself, without saying where it is malformed: decode it once
	// here for an error with its line and column.
	var cfgDoc any
	if err := atomicio.DecodeJSON(cfgPath, cfgData, &cfgDoc, false); err != nil {
		return nil, fmt.Errorf("tokenizer: malformed JSON: %w", err)
	}
	cfg, err := api.ParseConfigContent(withoutChatTemplate(cfgData))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", cfgPath, oneLine(err))
	}
	tjData, err := files.ReadFile("tokenizer.json")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	// The file read and checked once, as read; the encoders below parse again the parts they need
	// from the bytes in memory (applyFixes may have rewritten them).
	var head tokenizerJSONHead
	if err := atomicio.DecodeJSON(tjPath, tjData, &head, false); err != nil {
		return nil, fmt.Errorf("tokenizer: malformed JSON: %w", err)
	}
	if head.Model == nil {
		return nil, fmt.Errorf("tokenizer: %s: no \"model\" object", tjPath)
	}
	if !supported(head.Model.Type) {
		return nil, fmt.Errorf("tokenizer: %s: %w %q (supported: %s)", tjPath, ErrUnsupported, head.Model.Type, strings.Join(SupportedModels, ", "))
	}
	if len(head.Model.Vocab) == 0 || string(head.Model.Vocab) == "null" {
		return nil, fmt.Errorf("tokenizer: %s: model has no vocab", tjPath)
	}
	fixed, err := applyFixes(tjData)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", tjPath, oneLine(err))
	}
	lib, err := hftokenizer.NewFromContent(cfg, fixed)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", tjPath, oneLine(err))
	}
	plain := *lib
	if err := plain.With(api.EncodeOptions{AddSpecialTokens: false}); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", tjPath, oneLine(err))
	}
	withSpecial := *lib
	if err := withSpecial.With(api.EncodeOptions{AddSpecialTokens: true}); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", tjPath, oneLine(err))
	}
	split, err := newSplitter(cfg, fixed, lib)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", tjPath, oneLine(err))
	}
	fallback, err := newByteFallback(fixed, &plain)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", tjPath, oneLine(err))
	}
	uni, err := newUnigram(fixed)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", tjPath, oneLine(err))
	}
	var post struct {
		PostProcessor *struct {
			Type string `json:"type"`
		} `json:"post_processor"`
	}
	if err := json.Unmarshal(fixed, &post); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: post_processor: %v", tjPath, oneLine(err))
	}
	t := &Tokenizer{Dir: dir, Model: head.Model.Type, Class: cfg.TokenizerClass, withSpecial: &withSpecial, plain: &plain, split: split, fallback: fallback, unigram: uni, maxID: -1}
	if post.PostProcessor != nil {
		t.PostProcessor = post.PostProcessor.Type
	}
	for token, id := range plain.GetVocab() {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer: %s: token %q has the negative id %d", tjPath, token, id)
		}
		if id > t.maxID || (id == t.maxID && token < t.maxToken) {
			t.maxID, t.maxToken = id, token
		}
	}
	return t, nil
}

// MaxID returns the largest token id the tokenizer can produce (vocabulary and added tokens).
func (t *Tokenizer) MaxID() int { return t.maxID }

// CheckFits returns a one-line error when an id of the tokenizer has no row in a model's
// embedding of rows rows (config.json's vocab_size): such an id would index past the embedding
// (a panic), or silently read another table's memory in a gather. Models may have more rows than
// the tokenizer has ids (padded vocabularies, e.g. Qwen2), never fewer.
func (t *Tokenizer) CheckFits(rows int, what string) error {
	if t.maxID < rows {
		return nil
	}
	return fmt.Errorf("tokenizer: %s: token %q has id %d, but %s has only %d embedding rows (vocab_size): the tokenizer does not belong to this model",
		filepath.Join(t.Dir, "tokenizer.json"), t.maxToken, t.maxID, what, rows)
}

// Encode returns the token ids of text, with the special tokens of the tokenizer's post-processor
// (e.g. Llama 3's <|begin_of_text|>, Gemma's <bos>, BERT's [CLS] ... [SEP]) when addSpecialTokens
// is true, as transformers' tokenizer(text, add_special_tokens=addSpecialTokens)["input_ids"].
// Special tokens written in text (e.g. "<|eot_id|>") are recognized as their ids.
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) []int {
	if t.split != nil {
		return t.split.encode(text, addSpecialTokens)
	}
	if t.fallback != nil {
		return t.fallback.encode(text, addSpecialTokens)
	}
	if t.unigram != nil {
		return t.unigram.encode(text, addSpecialTokens)
	}
	var ids []int
	if addSpecialTokens {
		ids = t.withSpecial.Encode(text)
	} else {
		ids = t.plain.Encode(text)
	}
	if ids == nil {
		ids = []int{}
	}
	return ids
}

// Decode returns the text of ids, special tokens included, without transformers' clean-up of the
// spaces before punctuation (decode(ids, clean_up_tokenization_spaces=False)).
func (t *Tokenizer) Decode(ids []int) string {
	return t.plain.Decode(ids)
}

// VocabSize is the number of token ids, added tokens included.
func (t *Tokenizer) VocabSize() int {
	return t.plain.VocabSize()
}

// withoutChatTemplate drops chat_template from a tokenizer_config.json: the library's Config
// types it as a string, so the list form [{"name", "template"}] (valid in transformers) failed to
// parse, and the tokenizer never uses it (hf/chattemplate reads it). Data that is not a JSON
// object is returned as is, for the library's own error.
func withoutChatTemplate(data []byte) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return data
	}
	if _, ok := m["chat_template"]; !ok {
		return data
	}
	delete(m, "chat_template")
	out, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return out
}

func supported(model string) bool {
	for _, m := range SupportedModels {
		if m == model {
			return true
		}
	}
	return false
}

// oneLine keeps an error message on one line: library errors may wrap multi-line causes.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

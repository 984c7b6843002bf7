package subword

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/tracksum/tracksum/internal/atomicio"
)

// WriteFile writes v as a Hugging Face tokenizer.json (the "version 1.0" format with the standard
// top-level fields), atomically. The output is byte-identical for identical vocabularies: the model
// vocabulary is written in id order and merges in rank order.
//
// Byte-level BPE files use the ByteLevel pre-tokenizer, post-processor and decoder with
// add_prefix_space=true, so a word is tokenized the same at the start of a sentence and after a
// space. WordPiece files use the cased BertNormalizer and BertPreTokenizer, like bert-base-cased.
func (v *Vocab) WriteFile(path string) error {
	return atomicio.WriteWith(path, 0o644, v.writeJSON)
}

// writeJSON writes the tokenizer.json document. It is written by hand rather than by marshalling a
// map because encoding/json sorts map keys, and the HF convention (and readability) is id order.
func (v *Vocab) writeJSON(out io.Writer) error {
	var b bytes.Buffer
	str := func(s string) string {
		var sb bytes.Buffer
		enc := json.NewEncoder(&sb)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			panic(err) // a Go string always encodes
		}
		return string(bytes.TrimRight(sb.Bytes(), "\n"))
	}
	b.WriteString("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for id := 0; id < v.nSpecial; id++ {
		if id > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n    {\n      \"id\": %d,\n      \"content\": %s,\n      \"single_word\": false,\n      \"lstrip\": false,\n      \"rstrip\": false,\n      \"normalized\": false,\n      \"special\": true\n    }", id, str(v.tokens[id]))
	}
	b.WriteString("\n  ],\n")
	switch v.kind {
	case KindBPE:
		const byteLevel = `{
    "type": "ByteLevel",
    "add_prefix_space": true,
    "trim_offsets": true,
    "use_regex": true
  }`
		b.WriteString("  \"normalizer\": null,\n")
		b.WriteString("  \"pre_tokenizer\": " + byteLevel + ",\n")
		b.WriteString("  \"post_processor\": " + byteLevel + ",\n")
		b.WriteString("  \"decoder\": " + byteLevel + ",\n")
		b.WriteString("  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": " + str(unkToken) +
			",\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n")
	case KindWordPiece:
		b.WriteString("  \"normalizer\": {\n    \"type\": \"BertNormalizer\",\n    \"clean_text\": true,\n    \"handle_chinese_chars\": true,\n    \"strip_accents\": false,\n    \"lowercase\": false\n  },\n")
		b.WriteString("  \"pre_tokenizer\": {\n    \"type\": \"BertPreTokenizer\"\n  },\n")
		sep, cls := slices.Index(v.tokens[:v.nSpecial], "[SEP]"), slices.Index(v.tokens[:v.nSpecial], "[CLS]")
		if sep >= 0 && cls >= 0 {
			fmt.Fprintf(&b, "  \"post_processor\": {\n    \"type\": \"BertProcessing\",\n    \"sep\": [\n      \"[SEP]\",\n      %d\n    ],\n    \"cls\": [\n      \"[CLS]\",\n      %d\n    ]\n  },\n", sep, cls)
		} else {
			b.WriteString("  \"post_processor\": null,\n")
		}
		b.WriteString("  \"decoder\": {\n    \"type\": \"WordPiece\",\n    \"prefix\": \"##\",\n    \"cleanup\": true\n  },\n")
		b.WriteString("  \"model\": {\n    \"type\": \"WordPiece\",\n    \"unk_token\": " + str(unkToken) +
			",\n    \"continuing_subword_prefix\": \"##\",\n" + fmt.Sprintf("    \"max_input_chars_per_word\": %d,\n", maxWordPieceChars))
	default:
		return fmt.Errorf("unknown tokenizer kind %q", v.kind)
	}
	b.WriteString("    \"vocab\": {")
	for id, t := range v.tokens {
		if id > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n      %s: %d", str(t), id)
	}
	b.WriteString("\n    }")
	if v.kind == KindBPE {
		// Legacy "left right" strings, which every tokenizers version reads; byte-level tokens
		// never contain a space, so the split is unambiguous.
		b.WriteString(",\n    \"merges\": [")
		for i, mg := range v.merges {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n      " + str(mg[0]+" "+mg[1]))
		}
		b.WriteString("\n    ]")
	}
	b.WriteString("\n  }\n}\n")
	_, err := out.Write(b.Bytes())
	return err
}

// readVocab parses a tokenizer.json written by WriteFile back into a Vocab. ok is false (with a
// nil error) for a valid tokenizer.json of another layout, which Load then serves through the
// library only.
func readVocab(path string, data []byte) (v *Vocab, ok bool, err error) {
	var doc struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Normalizer   json.RawMessage `json:"normalizer"`
		PreTokenizer *struct {
			Type           string `json:"type"`
			AddPrefixSpace bool   `json:"add_prefix_space"`
		} `json:"pre_tokenizer"`
		Model struct {
			Type   string          `json:"type"`
			Vocab  json.RawMessage `json:"vocab"`
			Merges []string        `json:"merges"`
		} `json:"model"`
	}
	if err := atomicio.DecodeJSON(path, data, &doc, false); err != nil {
		return nil, false, err
	}
	vocab := map[string]int{}
	if err := json.Unmarshal(doc.Model.Vocab, &vocab); err != nil {
		return nil, false, fmt.Errorf("%s: model.vocab: %w", path, err)
	}
	tokens := make([]string, len(vocab))
	for t, id := range vocab {
		if id < 0 || id >= len(vocab) || tokens[id] != "" {
			return nil, false, fmt.Errorf("%s: model.vocab: ids are not 0..%d each used once (token %q has id %d)", path, len(vocab)-1, t, id)
		}
		tokens[id] = t
	}
	v = &Vocab{tokens: tokens}
	for i, at := range doc.AddedTokens {
		if at.ID != i || !at.Special || at.ID >= len(tokens) || tokens[at.ID] != at.Content {
			return v, false, nil
		}
		v.nSpecial++
	}
	switch {
	case doc.Model.Type == "BPE" && doc.PreTokenizer != nil && doc.PreTokenizer.Type == "ByteLevel" &&
		doc.PreTokenizer.AddPrefixSpace && string(doc.Normalizer) == "null":
		v.kind = KindBPE
		for _, m := range doc.Model.Merges {
			l, r, found := bytes.Cut([]byte(m), []byte(" "))
			if !found {
				return nil, false, fmt.Errorf("%s: model.merges: %q is not \"left right\"", path, m)
			}
			v.merges = append(v.merges, [2]string{string(l), string(r)})
		}
	case doc.Model.Type == "WordPiece" && doc.PreTokenizer != nil && doc.PreTokenizer.Type == "BertPreTokenizer":
		var n struct {
			Type      string `json:"type"`
			CleanText bool   `json:"clean_text"`
			Chinese   bool   `json:"handle_chinese_chars"`
			Strip     *bool  `json:"strip_accents"`
			Lowercase bool   `json:"lowercase"`
		}
		if json.Unmarshal(doc.Normalizer, &n) != nil || n.Type != "BertNormalizer" || !n.CleanText || !n.Chinese ||
			n.Lowercase || (n.Strip != nil && *n.Strip) {
			return v, false, nil
		}
		v.kind = KindWordPiece
	default:
		return v, false, nil
	}
	return v, true, nil
}

// readFile reads path, naming it in errors, within atomicio's limit of a tokenizer.json (Load
// also serves Hugging Face files).
func readFile(path string) ([]byte, error) {
	data, err := atomicio.ReadFileMax(path, atomicio.MaxTokenizerJSONBytes)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer: %w", err)
	}
	return data, nil
}

package randsnap

import (
	"fmt"
	"path/filepath"

	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// writeUnigram copies the tokenizer files from src, or writes a DeBERTa-v3-style SentencePiece
// Unigram tokenizer whose ids fit in vocab: [PAD], [CLS], [SEP], [UNK], "▁", then single
// characters and their "▁"-prefixed forms while ids remain (a test tokenizer: every word splits
// into characters), with DeBERTa-v3's Strip and " {2,}" normalizers (not its Precompiled
// charsmap, which is the SentencePiece model's), Metaspace and [CLS] $A [SEP] $B [SEP].
func writeUnigram(dir, src string, vocab, maxLen int) error {
	if src != "" {
		return writeTokenizer(dir, src, vocab)
	}
	if vocab < 6 {
		return fmt.Errorf("randsnap: vocab %d: a Unigram test tokenizer needs at least 6 ids", vocab)
	}
	specials := []string{"[PAD]", "[CLS]", "[SEP]", "[UNK]"}
	var pieces []any
	for _, s := range specials {
		pieces = append(pieces, []any{s, 0.0})
	}
	_, added := specialTokens(specials)
	pieces = append(pieces, []any{"▁", -2.0})
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789.,;:()-/%=+<>ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for i, c := range chars {
		if len(pieces) < vocab {
			pieces = append(pieces, []any{"▁" + string(c), -3.0 - 0.01*float64(i)})
		}
		if len(pieces) < vocab {
			pieces = append(pieces, []any{string(c), -4.0 - 0.01*float64(i)})
		}
	}
	meta := map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}
	tok := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Strip", "strip_left": true, "strip_right": true},
			map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": " {2,}"}, "content": " "},
		}},
		"pre_tokenizer":  map[string]any{"type": "Sequence", "pretokenizers": []any{meta}},
		"post_processor": clsSepTemplate(1, 2),
		"decoder":        meta,
		"model":          map[string]any{"type": "Unigram", "unk_id": 3, "vocab": pieces, "byte_fallback": false},
	}
	if err := atomicio.WriteJSON(filepath.Join(dir, snapshot.TokenizerFile), tok); err != nil {
		return err
	}
	cfg := map[string]any{
		"bos_token": "[CLS]", "eos_token": "[SEP]", "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]",
		"pad_token": "[PAD]", "mask_token": "[MASK]", "model_max_length": maxLen, "tokenizer_class": "DebertaV2Tokenizer",
		"do_lower_case": false, "split_by_punct": false, "vocab_type": "spm",
	}
	return atomicio.WriteJSON(filepath.Join(dir, snapshot.TokenizerConfigFile), cfg)
}

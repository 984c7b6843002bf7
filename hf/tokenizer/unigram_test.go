package tokenizer

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// unigramJSON is a tiny SentencePiece Unigram tokenizer.json of our own; the pre-tokenizer and
// normalizer are filled in by each case. Its parity with @huggingface/tokenizers on the
// DeBERTa-v3 shape is hf/encoder's TestDebertaTokensMatchTokenizersJS; these cases check by hand
// the branches that file does not take.
const unigramJSON = `{
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 1, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
  ],
  "normalizer": %s,
  "pre_tokenizer": %s,
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "pair": [],
    "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
  "decoder": null,
  "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": false, "vocab": [
    ["<unk>", 0.0], ["</s>", 0.0], ["▁", -2.0], ["▁ab", -3.0], ["a", -2.5], ["b", -2.5], ["ab", -6.0], ["c", -3.0],
    ["▁c", -2.0], ["fi", -1.0], ["▁fi", -1.5]]}
}`

// TestUnigramShapes: Viterbi over the scores (▁ab at -3 beats ▁ + a + b at -7; ab at -6 loses to a
// + b at -5), fused unknown runs, the Metaspace variants and the normalizers fix 4 takes.
func TestUnigramShapes(t *testing.T) {
	meta := func(extra string) string {
		return `{"type": "Metaspace", "replacement": "▁"` + extra + `}`
	}
	for _, tc := range []struct {
		desc, normalizer, pre, text string
		want                        []int
	}{
		{"viterbi and fused unknowns", `null`, meta(`, "prepend_scheme": "always", "split": true`), "ab xyz ab c", []int{3, 2, 0, 3, 8, 1}},
		{"unknown runs split by a known piece", `null`, meta(`, "prepend_scheme": "always"`), "ab x c y", []int{3, 2, 0, 8, 2, 0, 1}},
		{"never prepends", `null`, meta(`, "prepend_scheme": "never"`), "ab c", []int{4, 5, 8, 1}},
		{"legacy add_prefix_space false", `null`, meta(`, "add_prefix_space": false`), "ab", []int{4, 5, 1}},
		{"legacy add_prefix_space true", `null`, meta(`, "add_prefix_space": true`), "ab", []int{3, 1}},
		{"first prepends only at the input's start", `null`, meta(`, "prepend_scheme": "first"`), "ab</s>ab", []int{3, 1, 4, 5, 1}},
		{"no split: one piece", `null`, meta(`, "prepend_scheme": "always", "split": false`), "ab ab", []int{3, 3, 1}},
		{"no pre-tokenizer", `null`, `null`, "abab", []int{4, 5, 4, 5, 1}},
		{"strip and collapse", `{"type": "Sequence", "normalizers": [{"type": "Strip", "strip_left": true, "strip_right": true}, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}`,
			meta(`, "prepend_scheme": "always"`), "  ab   c \t", []int{3, 8, 1}},
		{"lowercase and NFKC", `{"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]}`,
			meta(`, "prepend_scheme": "always"`), "AB ﬁ", []int{3, 10, 1}},
		{"string replace", `{"type": "Replace", "pattern": {"String": "q"}, "content": "c"}`, meta(`, "prepend_scheme": "always"`), "q", []int{8, 1}},
		{"empty text", `null`, meta(`, "prepend_scheme": "always"`), "", []int{1}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := writeSnapshot(t, fmt.Sprintf(unigramJSON, tc.normalizer, tc.pre), `{"tokenizer_class": "T5Tokenizer"}`)
			tok, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tok.unigram == nil {
				t.Fatal("fix 4 did not take this file")
			}
			if got := tok.Encode(tc.text, true); !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
			}
			if got, want := tok.Encode(tc.text, false), tc.want[:len(tc.want)-1]; !slices.Equal(got, want) {
				t.Errorf("Encode(%q, false) = %v, want %v", tc.text, got, want)
			}
		})
	}
	// A shape fix 4 does not take is left to the library.
	dir := writeSnapshot(t, fmt.Sprintf(unigramJSON, `null`, `{"type": "Sequence", "pretokenizers": [{"type": "Punctuation", "behavior": "Isolated"}, `+meta("")+`]}`), `{}`)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.unigram != nil {
		t.Error("fix 4 took a Punctuation pre-tokenizer it does not implement")
	}
}

// charsmap builds a precompiled_charsmap (base64) mapping each key to its replacement: a
// darts-clone double array built first-fit, then the NUL-terminated replacements, in the layout
// newPrecompiled reads.
func charsmap(t *testing.T, m map[string]string) string {
	t.Helper()
	type node struct {
		children map[byte]*node
		value    int // offset of the replacement, -1 for none
	}
	newNode := func() *node { return &node{children: map[byte]*node{}, value: -1} }
	root := newNode()
	var blob []byte
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := root
		for i := 0; i < len(k); i++ {
			c, ok := n.children[k[i]]
			if !ok {
				c = newNode()
				n.children[k[i]] = c
			}
			n = c
		}
		n.value = len(blob)
		blob = append(append(blob, m[k]...), 0)
	}
	units := make([]uint32, 1<<12)
	used := make([]bool, len(units))
	used[0] = true
	var place func(n *node, pos uint32)
	place = func(n *node, pos uint32) {
		// base: the first free position with every child's slot (base ^ c) and, for a value, the
		// leaf slot (base ^ 0 = base) free.
		for base := uint32(1); ; base++ {
			if int(base) >= len(units) {
				t.Fatal("charsmap: array too small")
			}
			free := n.value < 0 || !used[base]
			for c := range n.children {
				if int(base^uint32(c)) >= len(units) || used[base^uint32(c)] {
					free = false
				}
			}
			if !free || (n.value < 0 && len(n.children) == 0) {
				continue
			}
			offset := pos ^ base
			units[pos] |= offset << 10
			if n.value >= 0 {
				units[pos] |= 1 << 8
				units[base] = 1<<31 | uint32(n.value)
				used[base] = true
			}
			for c := range n.children {
				units[base^uint32(c)] = uint32(c)
				used[base^uint32(c)] = true
			}
			for c, child := range n.children {
				place(child, base^uint32(c))
			}
			return
		}
	}
	place(root, 0)
	data := binary.LittleEndian.AppendUint32(nil, uint32(4*len(units)))
	for _, u := range units {
		data = binary.LittleEndian.AppendUint32(data, u)
	}
	return base64.StdEncoding.EncodeToString(append(data, blob...))
}

// TestPrecompiled: spm_precompiled's rules on a charsmap of ours: a whole grapheme cluster
// shorter than 6 bytes is replaced when it is a key (e + U+0301 -> é), else each character (ﬁ ->
// fi, U+3000 -> space); a key that only prefixes the cluster still replaces it (its first match);
// unmapped characters stay; and a malformed charsmap is an error.
func TestPrecompiled(t *testing.T) {
	p, err := newPrecompiled(charsmap(t, map[string]string{
		"ﬁ": "fi", "\u3000": " ", "e\u0301": "é", "\u00a0": " ", "x": "X", "\u0007": "",
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"ﬁne", "fine"},
		{"cafe\u0301", "café"},
		{"a\u3000b\u00a0c", "a b c"},
		{"x\u0301", "X"}, // first match "x" of the cluster x + U+0301 replaces the whole cluster
		{"bell\u0007", "bell"},
		{"plain 😀", "plain 😀"},
		{"", ""},
	} {
		if got := p.normalize(tc.in); got != tc.want {
			t.Errorf("normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"!!", base64.StdEncoding.EncodeToString([]byte{1, 0}), base64.StdEncoding.EncodeToString([]byte{200, 0, 0, 0, 1})} {
		if _, err := newPrecompiled(bad); err == nil || !strings.Contains(err.Error(), "precompiled_charsmap") {
			t.Errorf("newPrecompiled(%q): %v, want an error", bad, err)
		}
	}
}

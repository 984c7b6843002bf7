package subword

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// ErrInvalidTokenizer is wrapped by Load errors about a file that exists but is not a usable
// tokenizer.json.
var ErrInvalidTokenizer = errors.New("invalid tokenizer file")

// Tokenizer encodes text to token ids and decodes ids back to text. It is safe for concurrent use.
//
// The file is loaded by sugarme/tokenizer (the reference implementation). For the two layouts that
// WriteFile produces, Encode runs a native Go re-implementation of the same pipeline, which is several
// times faster and proven id-for-id equal to the library by the package tests; other tokenizer.json
// files are encoded by the library.
type Tokenizer struct {
	path   string
	vocab  *Vocab // tokens in id order; kind is "" for a file not written by WriteFile
	lib    *tokenizer.Tokenizer
	native encoder // nil when the layout is not one of ours
	unkID  int32
}

// encoder is a native implementation of a tokenizer.json pipeline on cleaned, non-empty text.
type encoder interface {
	encode(dst []int32, text string) []int32
}

// Load reads a tokenizer.json with sugarme/tokenizer. A missing, truncated or otherwise unusable
// file is an error naming the path, never a panic.
func Load(path string) (*Tokenizer, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse is Load of the tokenizer.json bytes data, read from path (which errors name): for a
// caller that holds them already (a checkpoint's verified files).
func Parse(path string, data []byte) (*Tokenizer, error) {
	var cfg tokenizer.Config
	if err := atomicio.DecodeJSON(path, data, &cfg, false); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTokenizer, err)
	}
	v, ours, err := readVocab(path, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTokenizer, err)
	}
	// Special tokens are left out of the library's added vocabulary: Encode treats its input as
	// plain text, so a literal "[SEP]" in an abstract is spelled out instead of becoming the
	// separator id (callers insert special ids with SpecialID). sugarme's added-token matching is
	// also wrong for several tokens in one text and slow. The ids of special tokens still resolve
	// through the model vocabulary.
	cfg.AddedTokens = nil
	lib, err := buildLibrary(&cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidTokenizer, path, err)
	}
	t := &Tokenizer{path: path, vocab: v, lib: lib, unkID: -1}
	if id, ok := v.index()[unkToken]; ok {
		t.unkID = id
	}
	if ours {
		t.native, err = newNativeEncoder(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidTokenizer, path, err)
		}
	}
	return t, nil
}

// buildLibrary constructs the sugarme tokenizer, turning its panics on malformed fields (it
// type-asserts JSON values without checking) into errors.
func buildLibrary(cfg *tokenizer.Config) (tk *tokenizer.Tokenizer, err error) {
	defer func() {
		if r := recover(); r != nil {
			tk, err = nil, fmt.Errorf("sugarme/tokenizer: %v", r)
		}
	}()
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	tk, err = pretrained.FromReader(bytes.NewReader(data))
	if err == nil && tk.GetModel() == nil {
		err = errors.New("no model")
	}
	return tk, err
}

// Path returns the file the tokenizer was loaded from.
func (t *Tokenizer) Path() string { return t.path }

// Kind returns KindBPE or KindWordPiece for files written by WriteFile, "" otherwise.
func (t *Tokenizer) Kind() string { return t.vocab.kind }

// VocabSize returns the number of ids, special tokens included: every id Encode returns is below it.
func (t *Tokenizer) VocabSize() int { return len(t.vocab.tokens) }

// SpecialID returns the id of a special token such as "[PAD]" or "[SEP]".
func (t *Tokenizer) SpecialID(tok string) (int32, bool) {
	for id := 0; id < t.vocab.nSpecial; id++ {
		if t.vocab.tokens[id] == tok {
			return int32(id), true
		}
	}
	return 0, false
}

// NumSpecial returns the number of special tokens; they have ids 0..NumSpecial()-1.
func (t *Tokenizer) NumSpecial() int { return t.vocab.nSpecial }

// TokenString returns the vocabulary entry of id as stored in tokenizer.json (byte-level BPE
// tokens show a leading space as "Ġ"; WordPiece continuations start with "##"), or "" for an id
// out of range.
func (t *Tokenizer) TokenString(id int32) string { return t.vocab.Token(int(id)) }

// Encode returns the ids of Clean(text), without adding special tokens. It never panics: should
// the library fail on some input, each word of the text is encoded as [UNK].
func (t *Tokenizer) Encode(text string) []int32 {
	s := Clean(text)
	if s == "" {
		return []int32{}
	}
	if t.native != nil {
		return t.encodeSafe(s, func(s string) []int32 { return t.native.encode(make([]int32, 0, len(s)/3+2), s) })
	}
	return t.encodeSafe(s, t.encodeLibrary)
}

// encodeReference encodes with sugarme/tokenizer, for comparisons with the native encoder.
func (t *Tokenizer) encodeReference(text string) []int32 {
	s := Clean(text)
	if s == "" {
		return []int32{}
	}
	return t.encodeSafe(s, t.encodeLibrary)
}

func (t *Tokenizer) encodeSafe(s string, encode func(string) []int32) (ids []int32) {
	defer func() {
		if r := recover(); r != nil {
			ids = t.unknownWords(s)
		}
	}()
	return encode(s)
}

func (t *Tokenizer) encodeLibrary(s string) []int32 {
	enc, err := t.lib.EncodeSingle(s, false)
	if err != nil {
		return t.unknownWords(s)
	}
	ids := make([]int32, len(enc.Ids))
	for i, id := range enc.Ids {
		ids[i] = int32(id)
	}
	return ids
}

// unknownWords is the fallback encoding: one [UNK] per space-separated word (nothing for a foreign
// file without [UNK]).
func (t *Tokenizer) unknownWords(s string) []int32 {
	if t.unkID < 0 {
		return []int32{}
	}
	n := len(strings.Fields(s))
	ids := make([]int32, 0, n)
	for range n {
		ids = append(ids, t.unkID)
	}
	return ids
}

// Decode turns ids back into text, skipping special tokens and ids out of range. For byte-level
// BPE, Decode(Encode(s)) == Clean(s) exactly; bytes that do not form valid UTF-8 (a generated
// sequence cut inside a character) become U+FFFD. WordPiece decoding joins "##" continuations and
// applies the BERT clean-up of spaces before punctuation, so it cannot restore the original spacing.
func (t *Tokenizer) Decode(ids []int32) string {
	v := t.vocab
	if v.kind == KindWordPiece {
		return decodeWordPiece(v, ids)
	}
	var b []byte
	for _, id := range ids {
		if int(id) < v.nSpecial || int(id) >= len(v.tokens) {
			continue
		}
		for _, r := range v.tokens[id] {
			if c, ok := charBytes[r]; ok {
				b = append(b, c)
			} else {
				b = utf8.AppendRune(b, r) // not a byte-level vocabulary: keep the text as is
			}
		}
	}
	// The pre-tokenizer added one space before the first word (add_prefix_space).
	b = bytes.TrimPrefix(b, []byte{' '})
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// decodeWordPiece follows the HF WordPiece decoder (prefix "##", cleanup true).
func decodeWordPiece(v *Vocab, ids []int32) string {
	var b strings.Builder
	first := true
	for _, id := range ids {
		if int(id) < v.nSpecial || int(id) >= len(v.tokens) {
			continue
		}
		tok := v.tokens[id]
		if rest, ok := strings.CutPrefix(tok, continuationPrefix); ok && !first {
			b.WriteString(rest)
		} else {
			if !first {
				b.WriteByte(' ')
			}
			b.WriteString(tok)
		}
		first = false
	}
	return cleanupDecoded(b.String())
}

// cleanupDecoded is the HF decoders' clean-up of tokenization spaces, applied in the same order as
// its sequence of replacements.
func cleanupDecoded(s string) string {
	for _, r := range [...][2]string{
		{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"},
		{" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
	} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

// index returns the token -> id map.
func (v *Vocab) index() map[string]int32 {
	m := make(map[string]int32, len(v.tokens))
	for id, t := range v.tokens {
		m[t] = int32(id)
	}
	return m
}

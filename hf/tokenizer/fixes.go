package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gomlx/go-huggingface/tokenizers/api"
	"github.com/gomlx/go-huggingface/tokenizers/hftokenizer"
)

// Fixes around go-huggingface v0.4.2's hftokenizer, each for a difference from Hugging Face's
// tokenizers measured on the real Llama 3.1 / Qwen3 / Gemma 3 tokenizers (testdata/golden.json):
//
//  1. Post-processor "Sequence" (Llama 3: [ByteLevel, TemplateProcessing]) is ignored by the
//     library, so <|begin_of_text|> was never added. applyFixes replaces such a Sequence by its
//     TemplateProcessing step (the ByteLevel post-processor only adjusts offsets, not ids).
//  2. Byte-level BPE with a Split pre-tokenizer regex (Llama 3, Qwen2/2.5/3): the library compiles
//     the regex with Go's RE2, which rejects the lookahead `\s+(?!\S)`, and then silently treats
//     the whole text as one word; its ByteLevel pre-tokenizer also splits at every space. Whitespace
//     runs, digit groups (\p{N}{1,3}) and punctuation runs came out wrong. splitter (below) runs the
//     pre-tokenizer regex instead: translated to RE2 (Oniguruma's Unicode \s) with the lookahead
//     alternative emulated by a scanner, followed by the GPT-2 byte-to-unicode mapping; each piece
//     is then encoded by the library's own BPE (a copy of the tokenizer without pre-tokenizer and
//     normalizer), honouring the model's ignore_merges. Special tokens are added by the library's
//     post-processor. Only this exact pre-tokenizer shape is taken over; others are left to the
//     library.
//  3. BPE with byte_fallback (Gemma, and SentencePiece BPE converted to tokenizer.json): the library
//     emits <unk> for a character missing from the vocabulary where Hugging Face emits the
//     character's UTF-8 bytes as <0xXX> tokens (e.g. "\r", U+00A0, U+2009, U+3000 in Gemma 3).
//     byteFallback cuts the text at such characters, has the library encode the stretches between
//     them, and emits the byte tokens itself. This is exact because no BPE merge involves a
//     character absent from the vocabulary, and the only pre-tokenizer accepted is Gemma's
//     Split(" ") after the Replace(" " -> "▁") normalizer, which never splits (the text
//     holds no space any more).
//  4. SentencePiece Unigram models (DeBERTa-v3): the library segments greedily; unigram.go encodes
//     them itself (Viterbi over the scores, fused unknowns, Strip, Metaspace, Precompiled).

// applyFixes rewrites a tokenizer.json before the library parses it (fix 1). It returns the input
// unchanged when no fix applies.
func applyFixes(data []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var pp struct {
		Type       string            `json:"type"`
		Processors []json.RawMessage `json:"processors"`
	}
	if raw, ok := doc["post_processor"]; !ok || json.Unmarshal(raw, &pp) != nil || pp.Type != "Sequence" {
		return data, nil
	}
	var keep json.RawMessage = []byte("null")
	for _, p := range pp.Processors {
		var step struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(p, &step); err != nil {
			return nil, fmt.Errorf("post_processor: %v", err)
		}
		switch step.Type {
		case "ByteLevel":
			// Offsets only: no effect on ids.
		case "TemplateProcessing", "BertProcessing", "RobertaProcessing":
			if string(keep) != "null" {
				return nil, fmt.Errorf("post_processor: Sequence with two template steps is not supported")
			}
			keep = p
		default:
			return nil, fmt.Errorf("post_processor: Sequence step %q is not supported", step.Type)
		}
	}
	doc["post_processor"] = keep
	return json.Marshal(doc)
}

// gpt4Lookahead is the alternative RE2 cannot compile, at the end of the Llama 3 / Qwen (GPT-4
// style) pre-tokenizer regexes: a whitespace run not followed by a non-space, else any run.
const gpt4Lookahead = `|\s+(?!\S)|\s+`

// onigSpace is Oniguruma's Unicode \s (the White_Space property) in RE2 syntax; RE2's \s is ASCII.
const onigSpace = `\t\n\x{0B}\f\r\x{85}\p{Z}`

// splitter is fix 2: the byte-level pre-tokenizer of Llama 3 / Qwen done in our code, with the
// library's BPE encoding each piece.
type splitter struct {
	re          *regexp.Regexp         // the pre-tokenizer regex without gpt4Lookahead, in RE2 syntax
	norm        *hftokenizer.Tokenizer // the full tokenizer, for its normalizer
	bare        *hftokenizer.Tokenizer // the library tokenizer without pre-tokenizer nor normalizer
	vocab       map[string]int
	ignoreMerge bool     // model.ignore_merges: a piece found in the vocab is one token
	added       []string // added tokens' contents, longest first, as the library matches them
	addedIDs    map[string]int
	// prefix and suffix are the special tokens the library's post-processor puts around a text.
	prefix, suffix []int
}

// translateRegex returns the RE2 form of a GPT-4 style pre-tokenizer regex (ending in
// gpt4Lookahead, no other lookaround) for splitter.pieces, or nil for another regex.
func translateRegex(pattern string) (*regexp.Regexp, error) {
	if !strings.HasSuffix(pattern, gpt4Lookahead) {
		return nil, nil
	}
	src := strings.TrimSuffix(pattern, gpt4Lookahead) + `|\s+`
	if strings.Contains(src, "(?=") || strings.Contains(src, "(?!") || strings.Contains(src, "(?<") {
		return nil, nil
	}
	// Oniguruma's \s is Unicode White_Space; RE2's is ASCII. Inside a negated class the set is
	// spliced in; elsewhere it becomes a class of its own.
	src = strings.ReplaceAll(src, `[^\s`, `[^`+onigSpace)
	src = strings.ReplaceAll(src, `\s`, `[`+onigSpace+`]`)
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("pre_tokenizer regex %q: %v", pattern, err)
	}
	return re, nil
}

// newSplitter returns the splitter for a tokenizer.json whose pre-tokenizer is
// Sequence[Split(regex ending in gpt4Lookahead, Isolated), ByteLevel(use_regex=false)] and whose
// model is BPE, or nil when the file has another shape.
func newSplitter(cfg *api.Config, data []byte, lib *hftokenizer.Tokenizer) (*splitter, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var pre struct {
		Type          string `json:"type"`
		PreTokenizers []struct {
			Type    string `json:"type"`
			Pattern struct {
				Regex string `json:"Regex"`
			} `json:"pattern"`
			Behavior string `json:"behavior"`
			Invert   bool   `json:"invert"`
			UseRegex *bool  `json:"use_regex"`
			Prefix   bool   `json:"add_prefix_space"`
		} `json:"pretokenizers"`
	}
	var model struct {
		Type         string `json:"type"`
		IgnoreMerges bool   `json:"ignore_merges"`
	}
	if json.Unmarshal(doc["pre_tokenizer"], &pre) != nil || json.Unmarshal(doc["model"], &model) != nil {
		return nil, nil
	}
	if model.Type != "BPE" || pre.Type != "Sequence" || len(pre.PreTokenizers) != 2 {
		return nil, nil
	}
	split, bl := pre.PreTokenizers[0], pre.PreTokenizers[1]
	if split.Type != "Split" || split.Behavior != "Isolated" || split.Invert ||
		bl.Type != "ByteLevel" || bl.UseRegex == nil || *bl.UseRegex || bl.Prefix {
		return nil, nil
	}
	re, err := translateRegex(split.Pattern.Regex)
	if err != nil || re == nil {
		return nil, err
	}
	// The bare tokenizer: same model, added tokens, post-processor and decoder, no normalizer nor
	// pre-tokenizer (a nil pre-tokenizer makes the library split on whitespace, which byte-level
	// mapped text never contains).
	doc["pre_tokenizer"] = []byte("null")
	doc["normalizer"] = []byte("null")
	bareJSON, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	bare, err := hftokenizer.NewFromContent(cfg, bareJSON)
	if err != nil {
		return nil, err
	}
	if err := bare.With(api.EncodeOptions{AddSpecialTokens: false}); err != nil {
		return nil, err
	}
	var added []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
	}
	if raw, ok := doc["added_tokens"]; ok {
		if err := json.Unmarshal(raw, &added); err != nil {
			return nil, fmt.Errorf("added_tokens: %v", err)
		}
	}
	s := &splitter{re: re, norm: lib, bare: bare, vocab: bare.GetVocab(), ignoreMerge: model.IgnoreMerges, addedIDs: map[string]int{}}
	for _, a := range added {
		if a.Content != "" {
			s.added = append(s.added, a.Content)
			s.addedIDs[a.Content] = a.ID
		}
	}
	slices.SortStableFunc(s.added, func(a, b string) int { return len(b) - len(a) })
	// The library's post-processor applied to a one-token probe gives the special tokens before
	// and after a text.
	probe := bare.Encode("a")
	withSpecial := *bare
	if err := withSpecial.With(api.EncodeOptions{AddSpecialTokens: true}); err != nil {
		return nil, err
	}
	framed := withSpecial.Encode("a")
	if len(probe) != 1 {
		return nil, fmt.Errorf("byte-level vocabulary has no token %q", "a")
	}
	i := slices.Index(framed, probe[0])
	if i < 0 {
		return nil, fmt.Errorf("post_processor drops the text's tokens")
	}
	s.prefix, s.suffix = framed[:i], framed[i+1:]
	return s, nil
}

// encode returns the ids of text, framed by the post-processor's special tokens when
// addSpecialTokens is true.
func (s *splitter) encode(text string, addSpecialTokens bool) []int {
	ids := []int{}
	if addSpecialTokens {
		ids = append(ids, s.prefix...)
	}
	ids = s.encodePlain(text, ids)
	if addSpecialTokens {
		ids = append(ids, s.suffix...)
	}
	return ids
}

// encodePlain appends the ids of text without special tokens to ids: added tokens first
// (leftmost, longest first), then for each stretch between them normalizer, regex pieces,
// byte-level mapping and BPE.
func (s *splitter) encodePlain(text string, ids []int) []int {
	for len(text) > 0 {
		at, tok := len(text), ""
		for _, a := range s.added {
			if i := strings.Index(text, a); i >= 0 && i < at {
				at, tok = i, a
			}
		}
		ids = s.encodeStretch(text[:at], ids)
		if tok == "" {
			break
		}
		ids = append(ids, s.addedIDs[tok])
		text = text[at+len(tok):]
	}
	return ids
}

func (s *splitter) encodeStretch(text string, ids []int) []int {
	if text == "" {
		return ids
	}
	text = s.norm.Normalize(text)
	for _, piece := range s.pieces(text) {
		mapped := byteLevel(piece)
		if id, ok := s.vocab[mapped]; ok && s.ignoreMerge {
			ids = append(ids, id)
			continue
		}
		ids = append(ids, s.bare.Encode(mapped)...)
	}
	return ids
}

// pieces splits text as the Split pre-tokenizer (behavior Isolated) with the original regex: the
// matches and the text between them. The RE2 regex lacks `\s+(?!\S)`; its `\s+` takes a whole
// whitespace run, where the original, when the run (of two or more characters, without a newline:
// an earlier alternative takes those) is followed by a non-space, stops one character short so
// that the last space joins the next word. The scanner cuts the match there and resumes.
func (s *splitter) pieces(text string) []string {
	var out []string
	for pos := 0; pos < len(text); {
		loc := s.re.FindStringIndex(text[pos:])
		if loc == nil {
			out = append(out, text[pos:])
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		if start > pos {
			out = append(out, text[pos:start])
		}
		if end == start {
			// An empty match cannot happen with these regexes; step over one character anyway.
			_, n := utf8.DecodeRuneInString(text[start:])
			out = append(out, text[start:start+n])
			pos = start + n
			continue
		}
		m := text[start:end]
		if end < len(text) && isSpaceRun(m) && utf8.RuneCountInString(m) > 1 {
			last, n := utf8.DecodeLastRuneInString(m)
			if last != '\n' && last != '\r' {
				end -= n
			}
		}
		out = append(out, text[start:end])
		pos = end
	}
	return out
}

var spaceRun = regexp.MustCompile(`^[` + onigSpace + `]+$`)

func isSpaceRun(s string) bool { return spaceRun.MatchString(s) }

// byteToRune is GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to
// U+0100 onwards, so that byte-level BPE works on printable characters only.
var byteToRune = func() [256]rune {
	var m [256]rune
	next := rune(256)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = next
			next++
		}
	}
	return m
}()

func byteLevel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteToRune[s[i]])
	}
	return b.String()
}

// byteFallback is fix 3: byte_fallback done around the library's BPE.
type byteFallback struct {
	lib   *hftokenizer.Tokenizer // the full tokenizer, without special tokens
	vocab map[string]int
	bytes [256]int // ids of <0x00> ... <0xFF>
	// prefix and suffix are the special tokens the library's post-processor puts around a text.
	prefix, suffix []int
}

// newByteFallback returns the byte fallback for a BPE tokenizer.json with byte_fallback, no
// pre-tokenizer or Split(" ") and no normalizer or Replace(" " -> "\u2581"), or nil for another
// shape.
func newByteFallback(data []byte, lib *hftokenizer.Tokenizer) (*byteFallback, error) {
	var doc struct {
		Model struct {
			Type         string `json:"type"`
			ByteFallback bool   `json:"byte_fallback"`
		} `json:"model"`
		Normalizer *struct {
			Type    string `json:"type"`
			Pattern struct {
				String *string `json:"String"`
			} `json:"pattern"`
			Content string `json:"content"`
		} `json:"normalizer"`
		PreTokenizer *struct {
			Type    string `json:"type"`
			Pattern struct {
				String *string `json:"String"`
			} `json:"pattern"`
		} `json:"pre_tokenizer"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Model.Type != "BPE" || !doc.Model.ByteFallback {
		return nil, nil
	}
	if n := doc.Normalizer; n != nil && (n.Type != "Replace" || n.Pattern.String == nil || *n.Pattern.String != " " || n.Content != "\u2581") {
		return nil, nil
	}
	if p := doc.PreTokenizer; p != nil && (p.Type != "Split" || p.Pattern.String == nil || *p.Pattern.String != " " || doc.Normalizer == nil) {
		return nil, nil
	}
	f := &byteFallback{lib: lib, vocab: lib.GetVocab()}
	var added struct {
		AddedTokens []struct {
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(data, &added); err != nil {
		return nil, err
	}
	for _, a := range added.AddedTokens {
		for _, r := range a.Content {
			if !f.known(r) {
				// Cutting the text at r would split this added token: leave the file to the
				// library.
				return nil, nil
			}
		}
	}
	for b := range f.bytes {
		id, ok := f.vocab[fmt.Sprintf("<0x%02X>", b)]
		if !ok {
			return nil, fmt.Errorf("byte_fallback model lacks the token <0x%02X>", b)
		}
		f.bytes[b] = id
	}
	withSpecial := *lib
	if err := withSpecial.With(api.EncodeOptions{AddSpecialTokens: true}); err != nil {
		return nil, err
	}
	probe := lib.Encode("a")
	framed := withSpecial.Encode("a")
	if len(probe) != 1 {
		return nil, fmt.Errorf("vocabulary has no token %q", "a")
	}
	i := slices.Index(framed, probe[0])
	if i < 0 {
		return nil, fmt.Errorf("post_processor drops the text's tokens")
	}
	f.prefix, f.suffix = framed[:i], framed[i+1:]
	return f, nil
}

// known reports whether the library's BPE has a symbol for r (after normalization).
func (f *byteFallback) known(r rune) bool {
	_, ok := f.vocab[f.lib.Normalize(string(r))]
	return ok
}

// encode returns the ids of text, framed by the post-processor's special tokens when
// addSpecialTokens is true.
func (f *byteFallback) encode(text string, addSpecialTokens bool) []int {
	ids := []int{}
	if addSpecialTokens {
		ids = append(ids, f.prefix...)
	}
	start := 0
	for i, r := range text {
		if f.known(r) {
			continue
		}
		if start < i {
			ids = append(ids, f.lib.Encode(text[start:i])...)
		}
		n := utf8.RuneLen(r)
		if r == utf8.RuneError {
			// Invalid UTF-8: the byte itself.
			n = 1
		}
		for _, b := range []byte(text[i : i+n]) {
			ids = append(ids, f.bytes[b])
		}
		start = i + n
	}
	if start < len(text) {
		ids = append(ids, f.lib.Encode(text[start:])...)
	}
	if addSpecialTokens {
		ids = append(ids, f.suffix...)
	}
	return ids
}

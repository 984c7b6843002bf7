package tokenizer

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Fix 4: SentencePiece Unigram models (DeBERTa-v2/v3, T5, XLM-R... converted to tokenizer.json).
// go-huggingface v0.4.2 encodes a Unigram model by greedy longest match, where Hugging Face's
// tokenizers (models/unigram/model.rs) takes the most probable segmentation (Viterbi over the
// pieces' scores) and fuses runs of unknown characters into one unk; the library also ignores the
// Strip normalizer (so trailing spaces became a "▁" token) and Metaspace's split on the
// replacement character. unigramEncoder does the whole encoding for the shapes below, measured
// against @huggingface/tokenizers on a DeBERTa-v3-shaped file (hf/encoder/testdata/deberta_v2):
//
//   - model Unigram with byte_fallback false (scores, unk_id; unknown characters score
//     min_score - 10, as model.rs's K_UNK_PENALTY, and a run of them is one unk token);
//   - normalizer null, or Strip, Replace (string or RE2-compatible regex), Lowercase,
//     NFC/NFD/NFKC/NFKD, Precompiled (SentencePiece's charsmap, precompiled.go), or a Sequence of
//     them;
//   - pre_tokenizer null, Metaspace (replacement, prepend_scheme always/first/never or the older
//     add_prefix_space, split) or a Sequence holding one Metaspace;
//   - post_processor null, TemplateProcessing, BertProcessing or RobertaProcessing (single-text
//     special tokens).
//
// Added tokens are matched on the raw text first (leftmost, longest first, as the splitter does);
// each stretch between them is normalized, pre-tokenized and segmented. Other shapes are left to
// the library.

// unkPenalty is model.rs's K_UNK_PENALTY: an unknown character scores min_score - unkPenalty.
const unkPenalty = 10.0

// unigramEncoder is fix 4.
type unigramEncoder struct {
	normalize func(string) string
	// meta is the Metaspace pre-tokenizer, or nil for none (the whole stretch is one piece).
	meta *metaspace
	// pieces maps a vocabulary piece to its id; scores are by id.
	pieces   map[string]int
	scores   []float64
	maxBytes int
	unk      int // unk_id, -1 when the model has none
	unkScore float64
	added    []string // added tokens' contents, longest first
	addedIDs map[string]int
	// prefix and suffix are the post-processor's special tokens around a single text.
	prefix, suffix []int
}

// metaspace is the Metaspace pre-tokenizer (pre_tokenizers/metaspace.rs).
type metaspace struct {
	replacement string
	scheme      string // "always", "first" or "never"
	split       bool
}

// newUnigram returns fix 4 for a tokenizer.json of the shapes above, or nil for another shape.
func newUnigram(data []byte) (*unigramEncoder, error) {
	var doc struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		Normalizer    json.RawMessage `json:"normalizer"`
		PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
		PostProcessor json.RawMessage `json:"post_processor"`
		Model         struct {
			Type         string          `json:"type"`
			UnkID        *int            `json:"unk_id"`
			Vocab        json.RawMessage `json:"vocab"`
			ByteFallback bool            `json:"byte_fallback"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Model.Type != "Unigram" || doc.Model.ByteFallback {
		return nil, nil
	}
	var vocab []json.RawMessage
	if err := json.Unmarshal(doc.Model.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("model.vocab: want a list of [piece, score]: %v", err)
	}
	normalize, ok, err := normalizerOf(doc.Normalizer)
	if err != nil || !ok {
		return nil, err
	}
	meta, ok := metaspaceOf(doc.PreTokenizer)
	if !ok {
		return nil, nil
	}
	u := &unigramEncoder{normalize: normalize, meta: meta, pieces: map[string]int{}, unk: -1, addedIDs: map[string]int{}}
	minScore := math.Inf(1)
	for id, raw := range vocab {
		var entry []any
		if err := json.Unmarshal(raw, &entry); err != nil || len(entry) != 2 {
			return nil, fmt.Errorf("model.vocab[%d]: want [piece, score]", id)
		}
		piece, ok1 := entry[0].(string)
		score, ok2 := entry[1].(float64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("model.vocab[%d]: want [piece, score]", id)
		}
		if _, dup := u.pieces[piece]; !dup {
			u.pieces[piece] = id
		}
		u.scores = append(u.scores, score)
		u.maxBytes = max(u.maxBytes, len(piece))
		minScore = math.Min(minScore, score)
	}
	if doc.Model.UnkID != nil {
		if *doc.Model.UnkID < 0 || *doc.Model.UnkID >= len(u.scores) {
			return nil, fmt.Errorf("model.unk_id %d is outside the vocabulary (%d pieces)", *doc.Model.UnkID, len(u.scores))
		}
		u.unk = *doc.Model.UnkID
	}
	u.unkScore = minScore - unkPenalty
	for _, a := range doc.AddedTokens {
		if a.Content != "" {
			u.added = append(u.added, a.Content)
			u.addedIDs[a.Content] = a.ID
		}
	}
	slices.SortStableFunc(u.added, func(a, b string) int { return len(b) - len(a) })
	u.prefix, u.suffix, ok, err = templateOf(doc.PostProcessor)
	if err != nil || !ok {
		return nil, err
	}
	return u, nil
}

// normalizerOf returns the function of a normalizer of the supported shapes; ok is false for
// another shape.
func normalizerOf(raw json.RawMessage) (f func(string) string, ok bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return func(s string) string { return s }, true, nil
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
		StripLeft   bool              `json:"strip_left"`
		StripRight  bool              `json:"strip_right"`
		Pattern     struct {
			String *string `json:"String"`
			Regex  *string `json:"Regex"`
		} `json:"pattern"`
		Content  string  `json:"content"`
		Charsmap *string `json:"precompiled_charsmap"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, false, fmt.Errorf("normalizer: %v", err)
	}
	switch n.Type {
	case "Sequence":
		var steps []func(string) string
		for _, child := range n.Normalizers {
			f, ok, err := normalizerOf(child)
			if err != nil || !ok {
				return nil, ok, err
			}
			steps = append(steps, f)
		}
		return func(s string) string {
			for _, f := range steps {
				s = f(s)
			}
			return s
		}, true, nil
	case "Strip":
		// normalizer.rs's strip: char::is_whitespace, which is Unicode's White_Space as unicode.IsSpace.
		return func(s string) string {
			if n.StripLeft {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if n.StripRight {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}, true, nil
	case "Replace":
		switch {
		case n.Pattern.String != nil:
			from, to := *n.Pattern.String, n.Content
			return func(s string) string { return strings.ReplaceAll(s, from, to) }, true, nil
		case n.Pattern.Regex != nil:
			re, err := regexp.Compile(*n.Pattern.Regex)
			if err != nil {
				return nil, false, nil // an Oniguruma-only regex: left to the library
			}
			to := n.Content
			return func(s string) string { return re.ReplaceAllLiteralString(s, to) }, true, nil
		}
		return nil, false, nil
	case "Lowercase":
		return strings.ToLower, true, nil
	case "NFC":
		return norm.NFC.String, true, nil
	case "NFD":
		return norm.NFD.String, true, nil
	case "NFKC":
		return norm.NFKC.String, true, nil
	case "NFKD":
		return norm.NFKD.String, true, nil
	case "Precompiled":
		if n.Charsmap == nil || *n.Charsmap == "" {
			return func(s string) string { return s }, true, nil
		}
		p, err := newPrecompiled(*n.Charsmap)
		if err != nil {
			return nil, false, fmt.Errorf("normalizer Precompiled: %v", err)
		}
		return p.normalize, true, nil
	}
	return nil, false, nil
}

// metaspaceOf returns the Metaspace pre-tokenizer of raw (nil for none); ok is false for another
// shape.
func metaspaceOf(raw json.RawMessage) (*metaspace, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	var p struct {
		Type          string            `json:"type"`
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
		Replacement   string            `json:"replacement"`
		PrependScheme *string           `json:"prepend_scheme"`
		AddPrefix     *bool             `json:"add_prefix_space"`
		Split         *bool             `json:"split"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return nil, false
	}
	switch p.Type {
	case "Sequence":
		if len(p.PreTokenizers) != 1 {
			return nil, false
		}
		m, ok := metaspaceOf(p.PreTokenizers[0])
		return m, ok && m != nil
	case "Metaspace":
		m := &metaspace{replacement: p.Replacement, scheme: "always", split: p.Split == nil || *p.Split}
		if utf8.RuneCountInString(m.replacement) != 1 {
			return nil, false
		}
		switch {
		case p.PrependScheme != nil:
			m.scheme = *p.PrependScheme
		case p.AddPrefix != nil && !*p.AddPrefix:
			m.scheme = "never"
		}
		if m.scheme != "always" && m.scheme != "first" && m.scheme != "never" {
			return nil, false
		}
		return m, true
	}
	return nil, false
}

// templateOf returns the special tokens a post-processor puts before and after a single text;
// ok is false for another post-processor.
func templateOf(raw json.RawMessage) (prefix, suffix []int, ok bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, true, nil
	}
	var p struct {
		Type   string `json:"type"`
		Single []struct {
			SpecialToken *struct {
				ID string `json:"id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID string `json:"id"`
			} `json:"Sequence"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
		CLS []any `json:"cls"`
		SEP []any `json:"sep"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, nil, false, fmt.Errorf("post_processor: %v", err)
	}
	switch p.Type {
	case "TemplateProcessing":
		seen := false
		for _, item := range p.Single {
			switch {
			case item.Sequence != nil:
				if seen {
					return nil, nil, false, fmt.Errorf("post_processor: the single template has two sequences")
				}
				seen = true
			case item.SpecialToken != nil:
				st, found := p.SpecialTokens[item.SpecialToken.ID]
				if !found {
					return nil, nil, false, fmt.Errorf("post_processor: special token %q is not in special_tokens", item.SpecialToken.ID)
				}
				if seen {
					suffix = append(suffix, st.IDs...)
				} else {
					prefix = append(prefix, st.IDs...)
				}
			}
		}
		if !seen {
			return nil, nil, false, fmt.Errorf("post_processor: the single template has no sequence")
		}
		return prefix, suffix, true, nil
	case "BertProcessing", "RobertaProcessing":
		id := func(pair []any) (int, bool) {
			if len(pair) != 2 {
				return 0, false
			}
			f, ok := pair[1].(float64)
			return int(f), ok
		}
		cls, ok1 := id(p.CLS)
		sep, ok2 := id(p.SEP)
		if !ok1 || !ok2 {
			return nil, nil, false, fmt.Errorf("post_processor: %s without cls and sep", p.Type)
		}
		return []int{cls}, []int{sep}, true, nil
	}
	return nil, nil, false, nil
}

// encode returns the ids of text, framed by the post-processor's special tokens when
// addSpecialTokens is true.
func (u *unigramEncoder) encode(text string, addSpecialTokens bool) []int {
	ids := []int{}
	if addSpecialTokens {
		ids = append(ids, u.prefix...)
	}
	first := true
	for len(text) > 0 {
		at, tok := len(text), ""
		for _, a := range u.added {
			if i := strings.Index(text, a); i >= 0 && i < at {
				at, tok = i, a
			}
		}
		ids = u.encodeStretch(text[:at], first, ids)
		first = false
		if tok == "" {
			break
		}
		ids = append(ids, u.addedIDs[tok])
		text = text[at+len(tok):]
	}
	if addSpecialTokens {
		ids = append(ids, u.suffix...)
	}
	return ids
}

// encodeStretch appends the ids of a text between added tokens: normalized, cut by Metaspace,
// each piece segmented. atStart says whether the stretch begins the input (prepend_scheme
// "first").
func (u *unigramEncoder) encodeStretch(text string, atStart bool, ids []int) []int {
	if text == "" {
		return ids
	}
	normalized := u.normalize(text)
	if normalized == "" {
		return ids
	}
	if u.meta == nil {
		return u.segment(normalized, ids)
	}
	m := u.meta
	s := strings.ReplaceAll(normalized, " ", m.replacement)
	// metaspace.rs prepends unless the text already starts with the replacement; "first" only
	// where the text starts at the input's first byte (a normalizer that stripped leading
	// characters moves it).
	startsInput := atStart && strings.HasPrefix(text, firstRune(normalized))
	if !strings.HasPrefix(s, m.replacement) && (m.scheme == "always" || (m.scheme == "first" && startsInput)) {
		s = m.replacement + s
	}
	if !m.split {
		return u.segment(s, ids)
	}
	// Split with MergedWithNext: each replacement character starts a new piece.
	start := 0
	for i, r := range s {
		if i > start && string(r) == m.replacement {
			ids = u.segment(s[start:i], ids)
			start = i
		}
	}
	return u.segment(s[start:], ids)
}

func firstRune(s string) string {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}

// segment appends the ids of the most probable segmentation of piece (model.rs's
// encode_optimized: best path over the vocabulary pieces' scores, unknown characters at
// unkScore, ties kept by the first path found), runs of unknown characters fused into one unk.
func (u *unigramEncoder) segment(piece string, ids []int) []int {
	n := len(piece)
	type node struct {
		score float64
		start int // -1: not reached
		id    int
	}
	best := make([]node, n+1)
	for i := range best {
		best[i].start = -1
	}
	for start := 0; start < n; {
		_, mblen := utf8.DecodeRuneInString(piece[start:])
		till := best[start].score
		single := false
		for end := start + 1; end <= n && end-start <= u.maxBytes; end++ {
			if end < n && !utf8.RuneStart(piece[end]) {
				continue // pieces are whole characters
			}
			id, ok := u.pieces[piece[start:end]]
			if !ok {
				continue
			}
			cand := u.scores[id] + till
			if t := &best[end]; t.start < 0 || cand > t.score {
				t.score, t.start, t.id = cand, start, id
			}
			if end-start == mblen {
				single = true
			}
		}
		if !single {
			cand := u.unkScore + till
			if t := &best[start+mblen]; t.start < 0 || cand > t.score {
				t.score, t.start, t.id = cand, start, u.unk
			}
		}
		start += mblen
	}
	var rev []int
	fusing := false
	for end := n; end > 0; end = best[end].start {
		nd := best[end]
		isUnk := u.unk >= 0 && nd.id == u.unk
		if isUnk && fusing {
			continue
		}
		fusing = isUnk
		if id := u.idOf(piece[nd.start:end], nd.id); id >= 0 {
			rev = append(rev, id)
		}
	}
	for i := len(rev) - 1; i >= 0; i-- {
		ids = append(ids, rev[i])
	}
	return ids
}

// idOf is token_to_id of a best-path token: its piece's id, unk for an unknown or fused run; a
// model without unk_id drops unknown characters (Hugging Face fails to encode them).
func (u *unigramEncoder) idOf(piece string, id int) int {
	if id >= 0 {
		return id
	}
	if pid, ok := u.pieces[piece]; ok {
		return pid
	}
	return u.unk
}

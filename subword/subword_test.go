package subword

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/sugarme/tokenizer/pretrained"
	"github.com/tracksum/tracksum/internal/golden"
)

var kinds = []string{KindBPE, KindWordPiece}

// readLines returns the non-empty lines of a testdata file.
func readLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// trainLoad trains on texts, writes tokenizer.json to a temporary directory and loads it.
func trainLoad(t testing.TB, texts []string, opts TrainOptions) (*Vocab, string, *Tokenizer) {
	t.Helper()
	v, err := Train(slices.Values(texts), opts)
	if err != nil {
		t.Fatalf("Train(%+v): %v", opts, err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := v.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return v, path, tok
}

// shared holds tokenizers trained once on the synthetic corpus, for the tests and fuzz targets
// that only need some realistic tokenizer of each kind.
var shared struct {
	once sync.Once
	dir  string
	tok  map[string]*Tokenizer
	err  error
}

func sharedTokenizer(t testing.TB, kind string) *Tokenizer {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "subword-test-")
		if shared.err != nil {
			return
		}
		shared.tok = map[string]*Tokenizer{}
		corpus := append(genCorpus(1, 3000), corpusHostile...)
		for _, k := range kinds {
			v, err := Train(slices.Values(corpus), TrainOptions{Kind: k, VocabSize: 800})
			if err != nil {
				shared.err = err
				return
			}
			p := filepath.Join(shared.dir, k+".json")
			if shared.err = v.WriteFile(p); shared.err != nil {
				return
			}
			if shared.tok[k], shared.err = Load(p); shared.err != nil {
				return
			}
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.tok[kind]
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func TestClean(t *testing.T) {
	tests := []struct {
		desc, in, want string
	}{
		{desc: "plain ASCII unchanged", in: "P = .001", want: "P = .001"},
		{desc: "empty", in: "", want: ""},
		{desc: "only spaces", in: " \t\n ", want: ""},
		{desc: "BOM dropped", in: "\ufeffMethods", want: "Methods"},
		{desc: "no-break and thin spaces become spaces", in: "3\u00a0mg/kg, P\u2009=\u00a0.001", want: "3 mg/kg, P = .001"},
		{desc: "runs collapsed and ends trimmed", in: "  a \t\r\n b  ", want: "a b"},
		{desc: "line and paragraph separators", in: "a\u2028b\u2029c\u0085d", want: "a b c d"},
		{desc: "controls dropped", in: "x\x00\x01\x1f\x7fy\u0080z", want: "xyz"},
		{desc: "format characters dropped", in: "zero\u200bwidth soft\u00adhyphen a\u200db \u202ertl", want: "zerowidth softhyphen ab rtl"},
		{desc: "invalid UTF-8 dropped", in: "a\xffb\xc3", want: "ab"},
		{desc: "replacement character dropped", in: "a\ufffdb", want: "ab"},
		{desc: "private use and noncharacters dropped", in: "a\ue000b\ufdd0c\uffffd", want: "abcd"},
		{desc: "unassigned code point dropped", in: "a\u0378b", want: "ab"},
		{desc: "NFC composition", in: "e\u0301 a\u0308", want: "é ä"},
		{desc: "composition across a dropped control", in: "e\x00\u0301", want: "é"},
		{desc: "lone combining mark kept", in: "\u0301x", want: "\u0301x"},
		{desc: "symbols and units kept", in: "5 µg ≥ 2 – 3 ± 1 ×10⁹/L", want: "5 µg ≥ 2 – 3 ± 1 ×10⁹/L"},
		{desc: "emoji and CJK kept", in: "😀 中文", want: "😀 中文"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := Clean(tt.in)
			if got != tt.want {
				t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := Clean(got); again != got {
				t.Errorf("Clean not idempotent: Clean(%q) = %q", got, again)
			}
		})
	}
}

func TestTrainOptionsErrors(t *testing.T) {
	tests := []struct {
		desc string
		opts TrainOptions
		want string
	}{
		{desc: "unknown kind", opts: TrainOptions{Kind: "unigram"}, want: `kind "unigram": must be "bpe" or "wordpiece"`},
		{desc: "vocab too small for byte alphabet", opts: TrainOptions{VocabSize: 200}, want: "vocab size 200: must be > 264"},
		{desc: "negative min frequency", opts: TrainOptions{MinFrequency: -1}, want: "min frequency -1: must be >= 1"},
		{desc: "missing unk", opts: TrainOptions{SpecialTokens: []string{"[PAD]"}}, want: `"[UNK]" is required`},
		{desc: "duplicate special", opts: TrainOptions{SpecialTokens: []string{"[PAD]", "[UNK]", "[PAD]"}}, want: `"[PAD]" listed twice`},
		{desc: "special with space", opts: TrainOptions{SpecialTokens: []string{"[PAD]", "[UNK]", "a b "}}, want: "contains whitespace"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := Train(slices.Values([]string{"x"}), tt.opts)
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Train error = %v, want ErrOptions containing %q", err, tt.want)
			}
		})
	}
}

// TestGolden pins the exact tokenizer.json for a small fixed corpus. Regenerate with
//
//	go test ./subword -run TestGolden -update
func TestGolden(t *testing.T) {
	corpus := readLines(t, "testdata/corpus.txt")
	for _, tt := range []struct {
		desc string
		opts TrainOptions
		file string
	}{
		{desc: "byte-level BPE", opts: TrainOptions{Kind: KindBPE, VocabSize: 400}, file: "bpe.tokenizer.json"},
		{desc: "WordPiece", opts: TrainOptions{Kind: KindWordPiece, VocabSize: 300}, file: "wordpiece.tokenizer.json"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, path, tok := trainLoad(t, corpus, tt.opts)
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", tt.file), got)
			if !json.Valid(got) {
				t.Errorf("output is not valid JSON")
			}
			if tok.VocabSize() != tt.opts.VocabSize {
				t.Errorf("VocabSize() = %d, want %d", tok.VocabSize(), tt.opts.VocabSize)
			}
		})
	}
}

func TestGoldenFilesLoadWithLibrary(t *testing.T) {
	for _, file := range []string{"bpe.tokenizer.json", "wordpiece.tokenizer.json"} {
		path := filepath.Join("testdata", "golden", file)
		lib, err := pretrained.FromFile(path)
		if err != nil {
			t.Fatalf("sugarme pretrained.FromFile(%s): %v", path, err)
		}
		tok, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := lib.GetVocabSize(true), tok.VocabSize(); got != want {
			t.Errorf("%s: library vocab size %d, ours %d", file, got, want)
		}
		for id, s := range DefaultSpecialTokens {
			if got, ok := lib.TokenToId(s); !ok || got != id {
				t.Errorf("%s: library id of %s = %d, %v; want %d", file, s, got, ok, id)
			}
		}
		// With its special tokens registered (as pretrained.FromFile does), the library must
		// still produce our ids on text without special-token literals.
		for _, s := range readLines(t, "testdata/corpus.txt") {
			enc, err := lib.EncodeSingle(Clean(s), false)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]int32, len(enc.Ids))
			for i, id := range enc.Ids {
				want[i] = int32(id)
			}
			if got := tok.Encode(s); !slices.Equal(got, want) {
				t.Errorf("%s: %q:\n got %v\nwant %v", file, s, got, want)
			}
		}
	}
}

func TestTrainDeterministic(t *testing.T) {
	corpus := append(genCorpus(7, 2000), corpusHostile...)
	reversed := slices.Clone(corpus)
	slices.Reverse(reversed)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			opts := TrainOptions{Kind: kind, VocabSize: 700}
			_, p1, _ := trainLoad(t, corpus, opts)
			_, p2, _ := trainLoad(t, corpus, opts)
			_, p3, _ := trainLoad(t, reversed, opts)
			b1, _ := os.ReadFile(p1)
			b2, _ := os.ReadFile(p2)
			b3, _ := os.ReadFile(p3)
			if !bytes.Equal(b1, b2) {
				t.Error("two trainings on the same corpus differ")
			}
			if !bytes.Equal(b1, b3) {
				t.Error("training depends on the order of the texts")
			}
		})
	}
}

func TestTrainStopsAtMinFrequency(t *testing.T) {
	texts := []string{"abab abab", "cdcd"}
	v, err := Train(slices.Values(texts), TrainOptions{VocabSize: 1000, MinFrequency: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Pairs occurring at least twice: (Ġ,a) (a,b) (b,a) in " abab" x2 and "cd" x2 ... training must
	// stop once every remaining pair is rarer than MinFrequency, well below VocabSize.
	if v.Size() >= 1000 || v.NumMerges() == 0 {
		t.Errorf("got %v, want some merges and fewer than 1000 tokens", v)
	}
	for _, m := range v.merges {
		if m[0] == "Ġ" && m[1] == "c" {
			t.Errorf("merged %q+%q, which occurs once", m[0], m[1])
		}
	}
}

func TestSpecialTokens(t *testing.T) {
	for _, kind := range kinds {
		tok := sharedTokenizer(t, kind)
		for want, s := range DefaultSpecialTokens {
			id, ok := tok.SpecialID(s)
			if !ok || id != int32(want) {
				t.Errorf("%s: SpecialID(%s) = %d, %v; want %d", kind, s, id, ok, want)
			}
			if got := tok.TokenString(int32(want)); got != s {
				t.Errorf("%s: TokenString(%d) = %q, want %q", kind, want, got, s)
			}
		}
		if _, ok := tok.SpecialID("the"); ok {
			t.Errorf("%s: SpecialID accepted a normal token", kind)
		}
		if got := tok.TokenString(int32(tok.VocabSize())); got != "" {
			t.Errorf("%s: TokenString(out of range) = %q", kind, got)
		}
		// Literal special-token strings in text are text, never special ids.
		for _, id := range tok.Encode("see [SEP] and [CLS] or [PAD] [UNK]") {
			if int(id) < tok.NumSpecial() && id != tok.unkID {
				t.Errorf("%s: literal special token encoded to special id %d", kind, id)
			}
		}
	}
}

func TestReloadRoundTrip(t *testing.T) {
	corpus := append(genCorpus(3, 1500), corpusHostile...)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			v, path, tok := trainLoad(t, corpus, TrainOptions{Kind: kind, VocabSize: 600})
			// The file read back describes the same vocabulary and rewrites byte-identically.
			data, _ := os.ReadFile(path)
			back, ours, err := readVocab(path, data)
			if err != nil || !ours {
				t.Fatalf("readVocab: ours=%v err=%v", ours, err)
			}
			if !slices.Equal(back.tokens, v.tokens) || !slices.Equal(back.merges, v.merges) || back.nSpecial != v.nSpecial {
				t.Fatal("vocabulary read back differs")
			}
			path2 := filepath.Join(t.TempDir(), "again.json")
			if err := back.WriteFile(path2); err != nil {
				t.Fatal(err)
			}
			data2, _ := os.ReadFile(path2)
			if !bytes.Equal(data, data2) {
				t.Error("rewriting the loaded vocabulary changed the file")
			}
			tok2, err := Load(path2)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range corpus {
				if a, b := tok.Encode(s), tok2.Encode(s); !slices.Equal(a, b) {
					t.Fatalf("ids changed after reload for %q: %v vs %v", s, a, b)
				}
			}
		})
	}
}

// realDataPath is the shared TracSum dev file, located relative to the repository root.
var realDataPath = filepath.Join("..", "..", "shared", "data", "tracsum", "tracsum-dev.jsonl")

// realSentences returns the distinct sentences and summaries of the shared TracSum dev file, or
// skips the test when the file is absent.
func realSentences(t testing.TB) []string {
	t.Helper()
	out, err := loadRealSentences()
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("real data not available: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func loadRealSentences() ([]string, error) {
	f, err := os.Open(realDataPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{} // an abstract appears once per aspect: keep each sentence once
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			Document []string
			Summary  string
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", realDataPath, line, err)
		}
		for _, s := range rec.Document {
			add(s)
		}
		add(rec.Summary)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", realDataPath, err)
	}
	return out, nil
}

// TestNativeMatchesLibrary is the proof that the native encoders produce sugarme's ids: on a large
// varied synthetic corpus, hostile strings, and the real dev abstracts when available, with a
// tokenizer trained on other text so that unseen words and rare merges occur.
func TestNativeMatchesLibrary(t *testing.T) {
	n, realStride := 10000, 1
	if testing.Short() {
		n, realStride = 1000, 8
	}
	texts := append(genCorpus(99, n), corpusHostile...)
	for _, s := range corpusHostile {
		texts = append(texts, s+" "+s, strings.Repeat(s, 3))
	}
	texts = append(texts, readLines(t, "testdata/corpus.txt")...)
	real, err := loadRealSentences()
	if errors.Is(err, os.ErrNotExist) {
		t.Logf("real data not available, checking synthetic text only: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	var realChecked []string
	for i := 0; i < len(real); i += realStride {
		realChecked = append(realChecked, real[i])
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			tokenizers := []*Tokenizer{sharedTokenizer(t, kind)}
			if len(real) > 0 {
				// A tokenizer learned on half of the real text, checked on all of it.
				_, _, tok := trainLoad(t, real[:len(real)/2], TrainOptions{Kind: kind, VocabSize: 4000})
				tokenizers = append(tokenizers, tok)
			}
			checked, bad := 0, 0
			for _, tok := range tokenizers {
				for _, s := range slices.Concat(texts, realChecked) {
					got, want := tok.Encode(s), tok.encodeReference(s)
					checked++
					if !slices.Equal(got, want) {
						bad++
						if bad <= 5 {
							t.Errorf("%q:\nnative  %v\nlibrary %v", Clean(s), got, want)
						}
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d texts differ", bad, checked)
			}
			t.Logf("%d texts identical (%d real)", checked, len(realChecked))
		})
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	tok := sharedTokenizer(t, KindBPE)
	tests := []struct{ desc, in string }{
		{desc: "dose", in: "3 mg/kg"},
		{desc: "confidence interval", in: "95% CI: 8.3-15.9"},
		{desc: "p-value", in: "P = .001"},
		{desc: "micro sign", in: "5 µg"},
		{desc: "greater or equal", in: "≥"},
		{desc: "en dash", in: "–"},
		{desc: "no-break spaces normalised", in: "12.1\u00a0months (95% CI: 8.3-15.9)"},
		{desc: "long number", in: "100000000 and 0.000001"},
		{desc: "contractions", in: "the patient's dose, they'll, we've"},
		{desc: "emoji", in: "😀👍🏽"},
		{desc: "CJK and RTL", in: "中文 עברית"},
		{desc: "combining mark normalised", in: "e\u0301"},
		{desc: "leading combining mark", in: "\u0301x"},
		{desc: "special literal stays text", in: "[SEP] x [CLS]"},
		{desc: "punctuation run", in: "!!!???...,,,"},
		{desc: "empty", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			ids := tok.Encode(tt.in)
			if got, want := tok.Decode(ids), Clean(tt.in); got != want {
				t.Errorf("Decode(Encode(%q)) = %q, want %q (ids %v)", tt.in, got, want, ids)
			}
		})
	}
	texts := append(genCorpus(5, 2000), corpusHostile...)
	if real, err := loadRealSentences(); err == nil {
		texts = append(texts, real...)
	}
	for _, s := range texts {
		if got, want := tok.Decode(tok.Encode(s)), Clean(s); got != want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", s, got, want)
		}
	}
}

func TestDecodeSkipsSpecialAndInvalid(t *testing.T) {
	tok := sharedTokenizer(t, KindBPE)
	bos, _ := tok.SpecialID("[BOS]")
	eos, _ := tok.SpecialID("[EOS]")
	ids := slices.Concat([]int32{bos}, tok.Encode("5 µg"), []int32{eos, 0, 0, -1, int32(tok.VocabSize())})
	if got := tok.Decode(ids); got != "5 µg" {
		t.Errorf("Decode = %q, want %q", got, "5 µg")
	}
	// A generated sequence may stop inside a multi-byte character.
	mu := tok.Encode("µ")
	var bytesOnly []int32
	for _, b := range []byte("µ") {
		bytesOnly = append(bytesOnly, tok.native.(*bpeEncoder).byteID[b])
	}
	if got := tok.Decode(bytesOnly[:1]); !utf8.ValidString(got) {
		t.Errorf("Decode of half a character = %q, not valid UTF-8", got)
	}
	if got := tok.Decode(mu); got != "µ" {
		t.Errorf("Decode(%v) = %q", mu, got)
	}
}

func TestDecodeWordPiece(t *testing.T) {
	tok := sharedTokenizer(t, KindWordPiece)
	tests := []struct{ desc, in, want string }{
		{desc: "words and continuations", in: "Patients received metformin", want: "Patients received metformin"},
		{desc: "punctuation clean-up", in: "Patients received placebo, twice daily.", want: "Patients received placebo, twice daily."},
		{desc: "numbers split at punctuation", in: "95% CI: 8.3-15.9", want: "95 % CI : 8. 3 - 15. 9"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := tok.Decode(tok.Encode(tt.in)); got != tt.want {
				t.Errorf("Decode(Encode(%q)) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestEncodeRegressions keeps inputs that crash sugarme/tokenizer when passed raw (found by fuzzing
// the library directly): Encode must clean them, never panic, and agree between both paths.
func TestEncodeRegressions(t *testing.T) {
	tests := []struct{ desc, in string }{
		{desc: "invalid UTF-8 byte: library index out of range in ByteLevel", in: "\xff"},
		{desc: "invalid UTF-8 inside text", in: "invalid \xff\xfe bytes"},
		{desc: "NUL: library slice bounds panic in NormalizedString.TransformRange", in: "\x00"},
		{desc: "NUL inside a word", in: "x\x00y"},
		{desc: "BOM", in: "\ufeff"},
		{desc: "lone combining mark", in: "\u0301"},
		{desc: "only controls", in: "\x01\x02\x03"},
		{desc: "only format characters", in: "\u200b\u200d\u2060"},
		{desc: "truncated multibyte", in: "µ\xc2"},
		{desc: "very long word", in: strings.Repeat("a", 5000)},
		{desc: "very long digit run", in: strings.Repeat("0", 1000)},
		{desc: "word over WordPiece max chars", in: strings.Repeat("é", 101)},
		{desc: "CJK Extension A is not split by the library's unsorted range table", in: "0䵢"},
		{desc: "CJK unified ideograph is split", in: "0中1"},
	}
	for _, kind := range kinds {
		tok := sharedTokenizer(t, kind)
		for _, tt := range tests {
			t.Run(kind+"/"+tt.desc, func(t *testing.T) {
				got, want := tok.Encode(tt.in), tok.encodeReference(tt.in)
				if !slices.Equal(got, want) {
					t.Errorf("native %v, library %v", got, want)
				}
				for _, id := range got {
					if id < 0 || int(id) >= tok.VocabSize() {
						t.Errorf("id %d out of range", id)
					}
				}
				if kind == KindBPE {
					if d := tok.Decode(got); d != Clean(tt.in) {
						t.Errorf("Decode = %q, want %q", d, Clean(tt.in))
					}
				}
			})
		}
	}
}

// TestLeadingFormatCharacter: raw sugarme WordPiece encodes "\ufeffabc" (BOM) or "\u200babc" as the
// word twice, and "a\x01b" loses a letter (alignment bugs of its BERT clean-up); Clean removes these
// characters before the library sees them.
func TestLeadingFormatCharacter(t *testing.T) {
	tests := []struct{ desc, in, same string }{
		{desc: "BOM before a word", in: "\ufeffabc", same: "abc"},
		{desc: "zero-width space before a word", in: "\u200babc", same: "abc"},
		{desc: "control inside a word", in: "a\x01b", same: "ab"},
		{desc: "controls before a word", in: "\x01\x02 x", same: "x"},
	}
	for _, kind := range kinds {
		tok := sharedTokenizer(t, kind)
		for _, tt := range tests {
			t.Run(kind+"/"+tt.desc, func(t *testing.T) {
				if got, want := tok.Encode(tt.in), tok.Encode(tt.same); !slices.Equal(got, want) {
					t.Errorf("Encode(%q) = %v, want Encode(%q) = %v", tt.in, got, tt.same, want)
				}
			})
		}
	}
}

func TestEncodeConcurrent(t *testing.T) {
	texts := genCorpus(11, 2000)
	for _, kind := range kinds {
		tok := sharedTokenizer(t, kind)
		want := make([][]int32, len(texts))
		for i, s := range texts {
			want[i] = tok.encodeReference(s)
		}
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range texts {
					j := (i*7 + g*131) % len(texts) // different orders: cache fills race
					if got := tok.Encode(texts[j]); !slices.Equal(got, want[j]) {
						select {
						case errs <- texts[j]:
						default:
						}
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for s := range errs {
			t.Errorf("%s: concurrent Encode(%q) differs", kind, s)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		desc, file, want string
	}{
		{desc: "missing file", file: "testdata/malformed/does-not-exist.json", want: "no such file"},
		{desc: "empty file", file: "testdata/malformed/empty.json", want: "invalid tokenizer file"},
		{desc: "truncated JSON", file: "testdata/malformed/truncated.json", want: "unexpected end of JSON input"},
		{desc: "not an object", file: "testdata/malformed/array.json", want: "invalid tokenizer file"},
		{desc: "vocab of wrong type", file: "testdata/malformed/vocab-type.json", want: "model.vocab"},
		{desc: "duplicate ids", file: "testdata/malformed/duplicate-ids.json", want: "each used once"},
		{desc: "no model type and garbage fields: library panic turned into error", file: "testdata/malformed/bad-pretokenizer.json", want: "invalid tokenizer file"},
		{desc: "merge of unknown result", file: "testdata/malformed/bad-merge.json", want: "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			tok, err := Load(tt.file)
			if err == nil {
				t.Fatalf("Load(%s) succeeded: %v", tt.file, tok)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.file) {
				t.Errorf("Load(%s) error = %q, want it to name the file and contain %q", tt.file, err, tt.want)
			}
		})
	}
}

func TestEncodeFallsBackToUnknown(t *testing.T) {
	tok := sharedTokenizer(t, KindBPE)
	got := tok.encodeSafe("a b c", func(string) []int32 { panic("library failure") })
	if !slices.Equal(got, []int32{tok.unkID, tok.unkID, tok.unkID}) {
		t.Errorf("fallback = %v, want three [UNK]", got)
	}
}

// TestForeignLayoutUsesLibrary loads a tokenizer.json that WriteFile would not produce (no prefix
// space): it must load, report no kind, and encode through the library.
func TestForeignLayoutUsesLibrary(t *testing.T) {
	data, err := os.ReadFile("testdata/golden/bpe.tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte(`"add_prefix_space": true`), []byte(`"add_prefix_space": false`))
	path := filepath.Join(t.TempDir(), "foreign.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if tok.native != nil || tok.Kind() != "" {
		t.Fatalf("foreign layout recognised as ours (kind %q)", tok.Kind())
	}
	s := "Patients received 3 mg/kg."
	ids := tok.Encode(s)
	if !slices.Equal(ids, tok.encodeReference(s)) || len(ids) == 0 {
		t.Errorf("Encode = %v, want the library's ids", ids)
	}
	if got := tok.Decode(ids); got != s {
		t.Errorf("Decode = %q, want %q", got, s)
	}
}

package pretrained

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/role"
	"github.com/tracksum/tracksum/model/variant"
)

// llamaDir holds the real Llama 3.1 tokenizer.json and tokenizer_config.json (with its chat
// template) when tools/hftokenizer/fetch.sh fetched them; they are not committed.
var llamaDir = filepath.Join("..", "..", "hf", "tokenizer", "testdata", "hf", "llama3")

var llama struct {
	once sync.Once
	chat *Chat
	err  error
}

// llamaChat loads the Llama 3.1 chat once per test binary (its tokenizer takes seconds to load).
func llamaChat(t *testing.T) *Chat {
	t.Helper()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(llamaDir, f)); err != nil {
			t.Skipf("%s is absent (not committed: fetch it with tools/hftokenizer/fetch.sh)", filepath.Join(llamaDir, f))
		}
	}
	llama.once.Do(func() { llama.chat, llama.err = LoadChat(llamaDir, nil, 0) })
	if llama.err != nil {
		t.Fatal(llama.err)
	}
	return llama.chat
}

func TestLlamaChatStopAndAnswer(t *testing.T) {
	c := llamaChat(t)
	eot, ok := c.single("<|eot_id|>")
	if !ok || !slices.Contains(c.Stop, eot) {
		t.Fatalf("stop ids %v do not include <|eot_id|> (%d)", c.Stop, eot)
	}
	msgs := TrackerMessages("Patients received 5-FU 400 mg/m².", AspectName(dataset.AspectSetTracSum, "m"))
	prompt, turn, err := c.Answer(msgs, AnswerYes)
	if err != nil {
		t.Fatal(err)
	}
	// The rendered prompt is the template's, ending with the assistant header.
	text := c.Tok.Decode(int32sToInts(prompt))
	want := "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nPlease determine whether the provided sentence contains information relevant to the given aspect.\n" +
		"Sentence: Patients received 5-FU 400 mg/m².\nAspect: Medicines Information.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if text != want {
		t.Errorf("prompt\n%q\nwant\n%q", text, want)
	}
	if got := c.Tok.Decode(int32sToInts(turn)); got != AnswerYes+"<|eot_id|>" {
		t.Errorf("answer turn %q, want %q", got, AnswerYes+"<|eot_id|>")
	}
	// Prompt with generation prompt equals Chat.Prompt.
	p2, err := c.Prompt(msgs)
	if err != nil || !slices.Equal(p2, prompt) {
		t.Errorf("Prompt %v (err %v), want %v", p2, err, prompt)
	}
	e := AnswerExample(prompt, turn)
	pos, tgt := lossPositions(e)
	if len(pos) != len(turn) || pos[0] != int32(len(prompt)-1) || !slices.Equal(tgt, turn) {
		t.Errorf("loss positions %v targets %v; want %d positions from %d with targets %v", pos, tgt, len(turn), len(prompt)-1, turn)
	}
	for i, l := range e.Labels {
		if (i < len(prompt)) != (l == decoder.IgnoreLabel) {
			t.Fatalf("label %d = %d: the prompt (%d tokens) must be masked and the answer not", i, l, len(prompt))
		}
	}
}

func TestLlamaYesNo(t *testing.T) {
	c := llamaChat(t)
	yn, err := findYesNo(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tok.Decode(int32sToInts(yn.Common)); got != "Relevance" && got != "Relevance:" {
		t.Errorf("common answer prefix %q", got)
	}
	y, n := c.Tok.Decode([]int{int(yn.Yes)}), c.Tok.Decode([]int{int(yn.No)})
	if !strings.Contains(y, "Yes") || !strings.Contains(n, "No") {
		t.Errorf("answer tokens %q / %q, want Yes / No", y, n)
	}
}

func TestTrackerExamplesOversampleAndFit(t *testing.T) {
	c := llamaChat(t)
	yn, err := findYesNo(c)
	if err != nil {
		t.Fatal(err)
	}
	rows := []dataset.TrackerRow{
		{PMID: "1", Aspect: "a", Sentence: "We aimed to test drug X.", Label: true},
		{PMID: "1", Aspect: "a", Sentence: strings.Repeat("Long sentence words ", 60), Label: false},
	}
	for _, tc := range []struct {
		desc, head, imbalance string
		want                  int
		posWeight             float32
	}{
		{"generative oversample", config.HeadGenerative, "oversample", 7 + 1, 1},
		{"lm_cls pos_weight", config.HeadLMCLS, "pos_weight", 2, 3},
		{"generative none", config.HeadGenerative, "none", 2, 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := &trackerPrompter{chat: c, head: tc.head, set: dataset.AspectSetTracSum, maxLen: 64, yn: yn}
			tcfg := config.DefaultTracker()
			tcfg.Imbalance, tcfg.Oversample, tcfg.PosWeight = tc.imbalance, 7, 3
			exs, err := trackerExamples(context.Background(), p.example, aspectPairs(rows), tcfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(exs) != tc.want {
				t.Fatalf("%d examples, want %d", len(exs), tc.want)
			}
			for _, e := range exs {
				if len(e.Tokens) > 64 {
					t.Errorf("example of %d tokens, max_seq_len 64", len(e.Tokens))
				}
			}
			if exs[0].Weight != tc.posWeight {
				t.Errorf("positive weight %g, want %g", exs[0].Weight, tc.posWeight)
			}
			if tc.head == config.HeadLMCLS && (exs[0].Target != 1 || exs[len(exs)-1].Target != 0) {
				t.Errorf("targets %g, %g; want 1, 0", exs[0].Target, exs[len(exs)-1].Target)
			}
			if tc.head == config.HeadGenerative {
				last := exs[len(exs)-1]
				pos, tgt := lossPositions(last)
				if len(pos) == 0 || !slices.Contains(tgt, yn.No) {
					t.Errorf("negative example's answer targets %v lack the No token %d", tgt, yn.No)
				}
			}
		})
	}
}

func TestLlamaSummarizerPrompt(t *testing.T) {
	c := llamaChat(t)
	for _, full := range []bool{false, true} {
		p := &summaryPrompter{chat: c, set: dataset.AspectSetTracSum, maxLen: 200, fullContext: full}
		doc := []string{"Background sentence one.", "We aimed to study X in 40 patients.", strings.Repeat("Filler text ", 80)}
		e, err := p.example("a", doc[1:2], doc, "The study aimed to study X.", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Tokens) > 200 {
			t.Errorf("full=%v: %d tokens, max_seq_len 200", full, len(e.Tokens))
		}
		text := c.Tok.Decode(int32sToInts(e.Tokens))
		for _, want := range []string{"<|start_header_id|>system<|end_header_id|>\n\n" + SummarizerSystem + "<|eot_id|>",
			"Summarize the research aims or questions of the study", `["We aimed to study X in 40 patients."]`,
			"<|start_header_id|>assistant<|end_header_id|>\n\nSummary: The study aimed to study X.<|eot_id|>"} {
			if !strings.Contains(text, want) {
				t.Errorf("full=%v: example lacks %q:\n%s", full, want, text)
			}
		}
		if strings.Contains(text, "Full Context") != full {
			t.Errorf("full=%v: Full Context section present = %v", full, !full)
		}
		_, tgt := lossPositions(e)
		if got := c.Tok.Decode(int32sToInts(tgt)); got != "Summary: The study aimed to study X.<|eot_id|>" {
			t.Errorf("loss covers %q", got)
		}
	}
}

func TestParseSummary(t *testing.T) {
	for _, tc := range []struct{ desc, in, want string }{
		{"prefix", "Summary: The study aims to test X.", "The study aims to test X."},
		{"no prefix", "The study aims to test X.", "The study aims to test X."},
		{"lower case and markdown", "**summary:** The study  aims\nto test X.", "The study aims to test X."},
		{"empty", "", dataset.UnknownSummary},
		{"prefix only", "Summary:", dataset.UnknownSummary},
		{"unknown", "Summary: unknown", dataset.UnknownSummary},
		{"commentary after a blank line", "Summary: X was tested.\n\nNote: this is a summary.", "X was tested."},
		{"special tokens", "Summary: X was tested.<|eot_id|>", "X was tested."},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ParseSummary(tc.in, []string{"<|eot_id|>"}); got != tc.want {
				t.Errorf("ParseSummary(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRenormYes(t *testing.T) {
	for _, tc := range []struct{ ly, ln, want float64 }{
		{0, 0, 0.5},
		{2, 1, math.E / (math.E + 1)},
		{-1000, 1000, 0},
		{1000, -1000, 1},
		{30.5, 30.5, 0.5},
	} {
		got := float64(RenormYes(float32(tc.ly), float32(tc.ln)))
		if math.Abs(got-tc.want) > 1e-6 || math.IsNaN(got) {
			t.Errorf("RenormYes(%g, %g) = %g, want %g", tc.ly, tc.ln, got, tc.want)
		}
	}
}

func TestSamplePiece(t *testing.T) {
	probs := []float32{0.5, 0.3, 0.2, 0}
	for _, tc := range []struct {
		desc        string
		temp, topP  float64
		topK        int
		u           float64
		want        int32
		neverAbove2 bool
	}{
		{"u=0 picks the most probable", 1, 0, 0, 0, 0, false},
		{"u just below 1 picks the least probable non-zero", 1, 0, 0, 0.999, 2, false},
		{"top-p 0.5 keeps only the first", 1, 0.5, 0, 0.999, 0, false},
		{"top-p 0.8 keeps two", 1, 0.8, 0, 0.999, 1, false},
		{"low temperature is greedy", 0.01, 0, 0, 0.9, 0, false},
		{"top-k 2 keeps two", 1, 0, 2, 0.999, 1, false},
		{"top-k 1 is greedy", 1, 0, 1, 0.999, 0, false},
		{"top-k before top-p: 0.6 of the two kept is the first", 1, 0.6, 2, 0.999, 0, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := samplePiece(probs, tc.temp, tc.topP, tc.topK, tc.u); got != tc.want {
				t.Errorf("samplePiece = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestAspectNames(t *testing.T) {
	for code, want := range map[string]string{"a": "Aims or Objective", "i": "Intervention or Methods", "o": "Outcomes or Results",
		"p": "Patients Information", "m": "Medicines Information", "d": "Treatment Duration", "s": "Side Effects"} {
		if got := AspectName(dataset.AspectSetTracSum, code); got != want {
			t.Errorf("AspectName(%s) = %q, want %q", code, got, want)
		}
	}
	if got := AspectName(dataset.AspectSetPCoA, "AE"); got != "Adverse Events" {
		t.Errorf("PCoA AE: %q", got)
	}
}

// TestOtherFamiliesAnswerTurn: the answer turn and the Yes/No token are found with the real
// Qwen3 (chatml, with its empty <think> block) and Gemma 3 templates too, when fetched.
func TestOtherFamiliesAnswerTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("loads two large tokenizers (~8 s)")
	}
	for _, tc := range []struct{ family, end string }{{"qwen3", "<|im_end|>"}, {"gemma3", "<end_of_turn>"}} {
		t.Run(tc.family, func(t *testing.T) {
			dir := filepath.Join(filepath.Dir(llamaDir), tc.family)
			if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
				t.Skipf("%s is absent (fetch it with tools/hftokenizer/fetch.sh)", dir)
			}
			c, err := LoadChat(dir, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if end, ok := c.single(tc.end); !ok || !slices.Contains(c.Stop, end) {
				t.Errorf("stop ids %v lack %s", c.Stop, tc.end)
			}
			yn, err := findYesNo(c)
			if err != nil {
				t.Fatal(err)
			}
			if y := c.Tok.Decode([]int{int(yn.Yes)}); !strings.Contains(y, "Yes") {
				t.Errorf("yes token %q", y)
			}
			_, turn, err := c.Answer(SummarizerMessages(dataset.AspectSetTracSum, "a", []string{"x"}, nil), SummarizerAnswer("S."))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Tok.Decode(int32sToInts(turn)); !strings.Contains(got, "Summary: S."+tc.end) {
				t.Errorf("answer turn %q", got)
			}
		})
	}
}

// TestVariantMessages: the Table 6 variants' user turns, word for word (Tables 18 and 19; the pair
// tracker's, which the paper does not print, in the released tracker prompt's style).
func TestVariantMessages(t *testing.T) {
	doc := []string{"Background.", `We aimed to test "X".`}
	for _, tc := range []struct {
		desc       string
		msgs       []chattemplate.Message
		wantSystem bool
		user       string
	}{
		{"sum_then_track summarizer (Table 18)", SumThenTrackMessages(dataset.AspectSetTracSum, "a", doc), true,
			"Instructions:\nSummarize the research aims or questions of the study in one clear sentence based on the given article.\n\n" +
				"Article:\n[\"Background.\",\"We aimed to test \\\"X\\\".\"]\n\nSummary:"},
		{"end_to_end (Table 19)", EndToEndMessages(dataset.AspectSetTracSum, "p", doc), true,
			"Instructions:\nGiven an article, summarize the information about the patients of the study in one clear sentence and output the index of the cited sentences.\n\n" +
				"Sentences:\n[\"0: Background.\",\"1: We aimed to test \\\"X\\\".\"]\n\nSummary:\nCitations:"},
		{"pair tracker", PairTrackerMessages("We aimed to test X.", "The study tested X."), false,
			"Please determine whether the provided sentence supports the given summary.\nSentence: We aimed to test X.\nSummary: The study tested X.\n"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			last := tc.msgs[len(tc.msgs)-1]
			if last.Role != "user" || last.Content != tc.user {
				t.Errorf("user turn\n%q\nwant\n%q", last.Content, tc.user)
			}
			if hasSystem := len(tc.msgs) == 2 && tc.msgs[0].Role == "system" && tc.msgs[0].Content == SummarizerSystem; hasSystem != tc.wantSystem {
				t.Errorf("system turn present = %v, want %v (%+v)", hasSystem, tc.wantSystem, tc.msgs)
			}
		})
	}
}

// TestParseEndToEnd reads the answers END-TO-END writes, well formed or not, with model/ete's
// repairs.
func TestParseEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		desc, in string
		n        int
		summary  string
		indexes  []int
		problems []string
		dropped  int
	}{
		{"training answer", EndToEndAnswer(" Adults with asthma. ", []int32{0, 3}), 5, "Adults with asthma.", []int{0, 3}, nil, 0},
		{"negative training answer", EndToEndAnswer("Unknown.", nil), 5, dataset.UnknownSummary, []int{}, nil, 0},
		{"end-of-turn token cut", "Summary: A.\nCitations: 2, 1<|eot_id|>", 5, "A.", []int{1, 2}, nil, 0},
		{"no summary prefix", "A. Citations: 4", 5, "A.", []int{4}, nil, 0},
		{"out of range, repeated and words dropped", "Summary: A.\nCitations: 1, 1, 9, two", 5, "A.",
			[]int{1}, []string{role.ProblemBadCitations, role.ProblemIndexOutOfRange, role.ProblemDuplicateIndex}, 3},
		{"unknown with citations", "Summary: Unknown.\nCitations: 0, 1", 5, dataset.UnknownSummary, []int{},
			[]string{role.ProblemUnknownWithCitations}, 2},
		{"no citations field", "Summary: A.", 5, "A.", []int{}, []string{role.ProblemNoCitations}, 0},
		{"empty answer", "", 5, dataset.UnknownSummary, []int{}, []string{role.ProblemNoSummary}, 0},
		{"citations without a summary", "Summary:\nCitations: 1", 5, dataset.UnknownSummary, []int{}, []string{role.ProblemNoSummary}, 1},
		{"lower case, bytes that change length when lower-cased", "İ summary: B.\ncitations: 0", 3, "B.", []int{0}, nil, 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			o := ParseEndToEnd(tc.in, tc.n, []string{"<|eot_id|>"})
			if o.Summary != tc.summary || !slices.Equal(o.Indexes, tc.indexes) || !slices.Equal(o.Problems, tc.problems) || o.Dropped != tc.dropped {
				t.Errorf("ParseEndToEnd(%q) = %+v; want summary %q, indexes %v, problems %v, dropped %d", tc.in, o, tc.summary, tc.indexes, tc.problems, tc.dropped)
			}
		})
	}
}

func TestEndToEndAnswer(t *testing.T) {
	for _, tc := range []struct {
		summary string
		cites   []int32
		want    string
	}{
		{"Adults with asthma.", []int32{0, 4, 11}, "Summary: Adults with asthma.\nCitations: 0, 4, 11"},
		{"Unknown.", nil, "Summary: Unknown.\nCitations:"},
	} {
		if got := EndToEndAnswer(tc.summary, tc.cites); got != tc.want {
			t.Errorf("EndToEndAnswer(%q, %v) = %q, want %q", tc.summary, tc.cites, got, tc.want)
		}
	}
}

// TestPairCut: a (sentence, summary) prompt gives up the summary's second half, then the
// sentence's, then the rest of each.
func TestPairCut(t *testing.T) {
	for _, tc := range []struct {
		desc                   string
		ns, nm, cut            int
		fromSentence, fromSumm int
	}{
		{"no cut", 10, 8, 0, 0, 0},
		{"within the summary's half", 10, 8, 3, 0, 3},
		{"summary's half then the sentence's", 10, 8, 6, 2, 4},
		{"both halves then the summary", 10, 8, 12, 5, 7},
		{"everything", 10, 8, 30, 10, 8},
		{"odd lengths", 5, 3, 3, 1, 2},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			s, m := pairCut(tc.ns, tc.nm, tc.cut)
			if s != tc.fromSentence || m != tc.fromSumm {
				t.Errorf("pairCut(%d, %d, %d) = %d, %d; want %d, %d", tc.ns, tc.nm, tc.cut, s, m, tc.fromSentence, tc.fromSumm)
			}
		})
	}
}

func TestCitationF1(t *testing.T) {
	for _, tc := range []struct {
		desc string
		pred [][]int
		ref  [][]int32
		want float64
	}{
		{"all negatives right", [][]int{{}, {}}, [][]int32{nil, nil}, 1},
		{"exact", [][]int{{0, 2}}, [][]int32{{0, 2}}, 1},
		{"half", [][]int{{0, 1}}, [][]int32{{0, 2}}, 0.5},
		{"missed", [][]int{{}}, [][]int32{{3}}, 0},
		{"micro over instances", [][]int{{0}, {1, 2}}, [][]int32{{0}, {5}}, 2.0 / 5},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var c citationCounts
			for i := range tc.pred {
				c.add(tc.pred[i], tc.ref[i])
			}
			if got := c.f1(); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("f1 = %g, want %g", got, tc.want)
			}
		})
	}
}

// TestLlamaVariantPrompts renders the variants' training examples with the Llama 3.1 template: the
// loss covers the answer only, and a long abstract is cut to fit max_seq_len.
func TestLlamaVariantPrompts(t *testing.T) {
	c := llamaChat(t)
	doc := []string{"Background sentence one.", "We aimed to study X in 40 patients.", strings.Repeat("Filler text ", 80)}
	for _, tc := range []struct {
		desc, variant string
		cites         []int32
		prompt, loss  string
	}{
		{"sum_then_track", variant.SumThenTrack, nil, `["Background sentence one.","We aimed to study X in 40 patients."`,
			"Summary: The study aimed to study X.<|eot_id|>"},
		{"end_to_end", variant.EndToEnd, []int32{1}, `["0: Background sentence one.","1: We aimed to study X in 40 patients."`,
			"Summary: The study aimed to study X.\nCitations: 1<|eot_id|>"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := &summaryPrompter{chat: c, set: dataset.AspectSetTracSum, maxLen: 160, variant: tc.variant}
			e, err := p.example("a", doc, nil, "The study aimed to study X.", tc.cites)
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Tokens) > 160 {
				t.Errorf("%d tokens, max_seq_len 160", len(e.Tokens))
			}
			text := c.Tok.Decode(int32sToInts(e.Tokens))
			if !strings.Contains(text, tc.prompt) || strings.Count(text, "Filler") >= 80 {
				t.Errorf("example lacks %q or its long sentence was not cut:\n%s", tc.prompt, text)
			}
			_, tgt := lossPositions(e)
			if got := c.Tok.Decode(int32sToInts(tgt)); got != tc.loss {
				t.Errorf("loss covers %q, want %q", got, tc.loss)
			}
		})
	}
	p := &trackerPrompter{chat: c, head: config.HeadLMCLS, set: dataset.AspectSetTracSum, maxLen: 80, pair: true}
	long := strings.Repeat("The summary goes on ", 40)
	ids, err := p.prompt("We aimed to study X in 40 patients.", long)
	if err != nil {
		t.Fatal(err)
	}
	text := c.Tok.Decode(int32sToInts(ids))
	if len(ids) > 80 || !strings.Contains(text, "supports the given summary") || !strings.Contains(text, "Summary: The summary goes on") {
		t.Errorf("pair prompt of %d tokens (max 80):\n%s", len(ids), text)
	}
}

func TestReadMetaVariant(t *testing.T) {
	for _, tc := range []struct {
		desc, task, variant, err string
	}{
		{"track-then-sum", dataset.TaskSummarizer, "", ""},
		{"sum_then_track tracker", dataset.TaskTracker, variant.SumThenTrack, ""},
		{"end_to_end", dataset.TaskSummarizer, variant.EndToEnd, ""},
		{"end_to_end tracker", dataset.TaskTracker, variant.EndToEnd, "an end_to_end model is a summarizer"},
		{"unknown variant", dataset.TaskSummarizer, "tts", `variant "tts"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			if err := checkpoint.WriteJSON(filepath.Join(dir, checkpoint.PretrainedFile), Meta{Task: tc.task, Variant: tc.variant}); err != nil {
				t.Fatal(err)
			}
			m, err := ReadMeta(dir)
			switch {
			case tc.err == "" && (err != nil || m.Variant != tc.variant):
				t.Errorf("ReadMeta = %+v, %v", m, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("ReadMeta: err %v, want one with %q", err, tc.err)
			}
		})
	}
}

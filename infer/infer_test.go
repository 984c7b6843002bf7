package infer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/pretrained"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/variant"
)

// fakeTracker scores sentence j of every document with scores[aspect][j].
type fakeTracker struct{ scores map[string][]float32 }

func (f fakeTracker) ScoreBatch(reqs []tracker.Request) ([][]float32, error) {
	out := make([][]float32, len(reqs))
	for i, r := range reqs {
		s, ok := f.scores[r.Aspect]
		if !ok {
			return nil, errors.New("unknown aspect " + r.Aspect)
		}
		out[i] = s[:len(r.Doc)]
	}
	return out, nil
}

// fakeSummarizer writes "ASPECT: cited sentences | document length" and records its requests.
type fakeSummarizer struct{ calls [][]summarizer.Request }

func (f *fakeSummarizer) Summarize(reqs []summarizer.Request, _ decode.Options) ([]string, error) {
	f.calls = append(f.calls, reqs)
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Aspect + ": " + strings.Join(r.Cited, " ") + " | " + string(rune('0'+len(r.Document)))
	}
	return out, nil
}

func TestProcess(t *testing.T) {
	doc := []string{"s0", "s1", "s2"}
	trk := fakeTracker{scores: map[string][]float32{
		"i": {0.1, 0.9, 0.5}, // 0.5 is kept: the rule is >= threshold
		"s": {0.2, 0.3, 0.49},
	}}
	tests := []struct {
		desc        string
		summarizer  bool
		fullContext bool
		want        []dataset.Prediction
	}{
		{desc: "track-then-sum", summarizer: true, want: []dataset.Prediction{
			{PMID: "1", Aspect: "i", Summary: "i: s1 s2 | 0", Indexes: []int{1, 2}, Scores: []float32{0.1, 0.9, 0.5}},
			{PMID: "1", Aspect: "s", Summary: dataset.UnknownSummary, Indexes: []int{}, Scores: []float32{0.2, 0.3, 0.49}},
		}},
		{desc: "full context passes the abstract", summarizer: true, fullContext: true, want: []dataset.Prediction{
			{PMID: "1", Aspect: "i", Summary: "i: s1 s2 | 3", Indexes: []int{1, 2}, Scores: []float32{0.1, 0.9, 0.5}},
			{PMID: "1", Aspect: "s", Summary: dataset.UnknownSummary, Indexes: []int{}, Scores: []float32{0.2, 0.3, 0.49}},
		}},
		{desc: "track-only leaves summaries empty", want: []dataset.Prediction{
			{PMID: "1", Aspect: "i", Summary: "", Indexes: []int{1, 2}, Scores: []float32{0.1, 0.9, 0.5}},
			{PMID: "1", Aspect: "s", Summary: dataset.UnknownSummary, Indexes: []int{}, Scores: []float32{0.2, 0.3, 0.49}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p := &Pipeline{Tracker: trk, Threshold: 0.5, FullContext: tc.fullContext}
			var fs *fakeSummarizer
			if tc.summarizer {
				fs = &fakeSummarizer{}
				p.Summarizer = fs
			}
			got, err := p.Process(Abstract{PMID: "1", Document: doc, Aspects: []string{"i", "s"}})
			if err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tc.want)
			if string(gb) != string(wb) {
				t.Errorf("got  %s\nwant %s", gb, wb)
			}
			// The negative aspect never reaches the summarizer, and all positives of an abstract
			// are summarized in one batched call.
			if fs != nil && (len(fs.calls) != 1 || len(fs.calls[0]) != 1) {
				t.Errorf("summarizer calls = %v, want one call with one request", fs.calls)
			}
		})
	}
}

func TestNegativeJSONHasNoCitation(t *testing.T) {
	p := &Pipeline{Tracker: fakeTracker{scores: map[string][]float32{"d": {0, 0}}}, Threshold: 0.5, Summarizer: &fakeSummarizer{}}
	got, err := p.Process(Abstract{PMID: "7", Document: []string{"a", "b"}, Aspects: []string{"d"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got[0])
	if want := `{"PMID":"7","Aspect":"d","Summary":"Unknown.","Indexes":[],"Scores":[0,0]}`; string(b) != want {
		t.Errorf("negative prediction = %s, want %s", b, want)
	}
}

func TestReadInput(t *testing.T) {
	tests := []struct {
		desc    string
		path    string
		aspects []string
		want    []Abstract
		refs    int
		wantErr string
	}{
		{desc: "benchmark JSONL groups instances by abstract", path: "testdata/instances.jsonl", refs: 3, want: []Abstract{
			{PMID: "100", Aspects: []string{"i", "s"}},
			{PMID: "200", Aspects: []string{"p"}},
		}},
		{desc: "aspect filter on JSONL", path: "testdata/instances.jsonl", aspects: []string{"s"}, refs: 1, want: []Abstract{
			{PMID: "100", Aspects: []string{"s"}},
		}},
		{desc: "raw text gets every aspect", path: "testdata/abstracts.txt", want: []Abstract{
			{PMID: "abstracts-1", Aspects: []string{"a", "i", "o", "p", "m", "d", "s"}},
			{PMID: "abstracts-2", Aspects: []string{"a", "i", "o", "p", "m", "d", "s"}},
		}},
		{desc: "raw text with chosen aspects", path: "testdata/abstracts.txt", aspects: []string{"m", "d"}, want: []Abstract{
			{PMID: "abstracts-1", Aspects: []string{"m", "d"}},
			{PMID: "abstracts-2", Aspects: []string{"m", "d"}},
		}},
		{desc: "unknown aspect", path: "testdata/abstracts.txt", aspects: []string{"zz"}, wantErr: `unknown aspect "zz"`},
		{desc: "missing input", path: "testdata/nope.jsonl", wantErr: "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, refs, err := ReadInput(tc.path, "", dataset.AspectSetTracSum, tc.aspects)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(refs) != tc.refs {
				t.Errorf("%d reference instances, want %d", len(refs), tc.refs)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d abstracts, want %d", len(got), len(tc.want))
			}
			for i, a := range got {
				if a.PMID != tc.want[i].PMID || !slices.Equal(a.Aspects, tc.want[i].Aspects) || len(a.Document) == 0 {
					t.Errorf("abstract %d = %s %v (%d sentences), want %s %v", i, a.PMID, a.Aspects, len(a.Document), tc.want[i].PMID, tc.want[i].Aspects)
				}
			}
		})
	}
}

func TestRawTextSentences(t *testing.T) {
	got, _, err := ReadInput("testdata/abstracts.txt", "", dataset.AspectSetTracSum, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"We studied drug X in adults.", "Patients received 20 mg daily for 8 weeks.", "Pain decreased by 30%."}
	if !slices.Equal(got[0].Document, want) {
		t.Errorf("sentences = %q, want %q", got[0].Document, want)
	}
}

func TestRunPipelineKeepsOrder(t *testing.T) {
	p := &Pipeline{Tracker: fakeTracker{scores: map[string][]float32{"i": {1, 0, 1, 0, 1}}}, Threshold: 0.5, Summarizer: &syncSummarizer{}}
	var abstracts []Abstract
	for i := range 20 {
		abstracts = append(abstracts, Abstract{PMID: string(rune('A' + i)), Document: []string{"x", "y", "z"}, Aspects: []string{"i"}})
	}
	res, err := RunPipeline(context.Background(), p, abstracts, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r[0].PMID != abstracts[i].PMID || !slices.Equal(r[0].Indexes, []int{0, 2}) {
			t.Errorf("result %d = %+v", i, r[0])
		}
	}
}

// syncSummarizer is a stateless summarizer, safe for concurrent use.
type syncSummarizer struct{}

func (syncSummarizer) Summarize(reqs []summarizer.Request, _ decode.Options) ([]string, error) {
	return make([]string, len(reqs)), nil
}

func TestGoldTrackerRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pred.jsonl")
	refs := filepath.Join(t.TempDir(), "refs.jsonl")
	cfg := config.Default()
	st, err := Run(context.Background(), &cfg, Options{Tracker: GoldTracker, Input: "testdata/instances.jsonl", Out: out, Refs: refs, Log: discard{}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Abstracts != 2 || st.Predictions != 3 {
		t.Errorf("stats = %+v, want 2 abstracts and 3 predictions", st)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"PMID":"100","Aspect":"i","Summary":"","Indexes":[1],"Scores":[0,1,0]}
{"PMID":"100","Aspect":"s","Summary":"Unknown.","Indexes":[],"Scores":[0,0,0]}
{"PMID":"200","Aspect":"p","Summary":"","Indexes":[0],"Scores":[1,0]}
`
	if string(b) != want {
		t.Errorf("predictions:\n%s\nwant:\n%s", b, want)
	}
	if _, err := dataset.ReadInstances(refs); err != nil {
		t.Errorf("written references do not read back: %v", err)
	}
}

func TestGoldTrackerNeedsAnnotations(t *testing.T) {
	cfg := config.Default()
	_, err := Run(context.Background(), &cfg, Options{Tracker: GoldTracker, Input: "testdata/abstracts.txt", Out: filepath.Join(t.TempDir(), "p.jsonl"), Log: discard{}})
	if err == nil || !strings.Contains(err.Error(), "annotated input") {
		t.Errorf("error = %v, want one about annotated input", err)
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

func TestExtractiveBaseline(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pred.jsonl")
	cfg := config.Default()
	if _, err := Run(context.Background(), &cfg, Options{Tracker: GoldTracker, Summarizer: ExtractiveSummarizer,
		Input: "testdata/instances.jsonl", Out: out, Log: discard{}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"Summary":"Patients received 20 mg daily for 8 weeks.","Indexes":[1]`) {
		t.Errorf("extractive predictions do not copy the cited sentence:\n%s", b)
	}
}

// fixedSummarizer answers every request with its summary.
type fixedSummarizer struct{ summary string }

func (f fixedSummarizer) Summarize(reqs []summarizer.Request, _ decode.Options) ([]string, error) {
	out := make([]string, len(reqs))
	for i := range out {
		out[i] = f.summary
	}
	return out, nil
}

// TestGroundingKeepsRawSummary checks that a prediction whose summary or citations grounding
// changed keeps the summarizer's own summary and the tracker's citations (issue 36 item 9), and
// that one grounding left alone carries neither.
func TestGroundingKeepsRawSummary(t *testing.T) {
	doc := []string{"Patients received aspirin 100 mg daily.", "Mortality fell by 12 percent at one year."}
	raw := "Patients received aspirin 100 mg daily."
	for _, tc := range []struct {
		mode              string
		wantRaw           string
		wantRawIdx        []int
		wantSummaryChange bool
	}{
		{mode: "restore", wantRaw: raw, wantSummaryChange: true},
		{mode: "prune", wantRawIdx: []int{0, 1}},
		{mode: "off"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := config.Default()
			cfg.Infer.Grounding = tc.mode
			p := &Pipeline{Tracker: fakeTracker{scores: map[string][]float32{"i": {1, 1}}}, Threshold: 0.5,
				Summarizer: fixedSummarizer{raw}, Ground: NewGrounder(&cfg)}
			res, err := RunPipeline(context.Background(), p, []Abstract{{PMID: "1", Document: doc, Aspects: []string{"i"}}}, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := res[0][0]
			if got.SummaryRaw != tc.wantRaw || !slices.Equal(got.IndexesRaw, tc.wantRawIdx) {
				t.Errorf("SummaryRaw %q IndexesRaw %v, want %q %v (summary %q, indexes %v)", got.SummaryRaw, got.IndexesRaw, tc.wantRaw, tc.wantRawIdx, got.Summary, got.Indexes)
			}
			if (got.Summary != raw) != tc.wantSummaryChange {
				t.Errorf("summary %q: changed %v, want %v", got.Summary, got.Summary != raw, tc.wantSummaryChange)
			}
		})
	}
}

// TestOneCheckpointErrorFamily (issue 34 item 5): every checkpoint error a loader returns is one
// family: errors.Is(err, checkpoint.ErrCheckpoint) holds for each model's sentinel and for the
// fold ensemble's.
func TestOneCheckpointErrorFamily(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"tracker", tracker.ErrCheckpoint}, {"summarizer", summarizer.ErrCheckpoint}, {"pretrained", pretrained.ErrCheckpoint},
		{"variant", variant.ErrCheckpoint}, {"ensemble", ErrEnsemble},
	} {
		if err := fmt.Errorf("%w: ck: detail", tc.err); !errors.Is(err, checkpoint.ErrCheckpoint) {
			t.Errorf("%s: %v does not wrap checkpoint.ErrCheckpoint", tc.name, err)
		}
	}
}

package role

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/decode"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
)

// fakeSummarizer answers each aspect with sums[aspect], and records what it was asked.
type fakeSummarizer struct {
	sums map[string]string
	got  []summarizer.Request
}

func (f *fakeSummarizer) Summarize(reqs []summarizer.Request, _ decode.Options) ([]string, error) {
	f.got = append(f.got, reqs...)
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = f.sums[r.Aspect]
	}
	return out, nil
}

// fakePairs scores sentence k of every pair scores[k], and records the pairs it was asked.
type fakePairs struct {
	scores []float32
	err    error
	got    []tracker.PairRequest
}

func (f *fakePairs) ScorePairs(reqs []tracker.PairRequest) ([][]float32, error) {
	f.got = append(f.got, reqs...)
	if f.err != nil {
		return nil, f.err
	}
	out := make([][]float32, len(reqs))
	for i, r := range reqs {
		out[i] = f.scores[:min(len(f.scores), len(r.Doc))]
	}
	return out, nil
}

// TestSumThenTrackPredict: the whole abstract is summarized per aspect; a negative summary is
// "Unknown." without citations or scores and is never paired; a positive one cites the sentences
// scoring >= the threshold and keeps every score.
func TestSumThenTrackPredict(t *testing.T) {
	doc := []string{"s0", "s1", "s2"}
	for _, tc := range []struct {
		name      string
		sums      map[string]string
		threshold float64
		want      []dataset.Prediction
		pairs     int
	}{
		{"cited above threshold", map[string]string{"a": "Adults.", "p": "unknown"}, 0.5, []dataset.Prediction{
			{PMID: "9", Aspect: "a", Summary: "Adults.", Indexes: []int{0, 2}, Scores: []float32{0.9, 0.2, 0.5}},
			{PMID: "9", Aspect: "p", Summary: dataset.UnknownSummary, Indexes: []int{}}}, 1},
		{"none cited", map[string]string{"a": "Adults.", "p": "Pain."}, 0.95, []dataset.Prediction{
			{PMID: "9", Aspect: "a", Summary: "Adults.", Indexes: []int{}, Scores: []float32{0.9, 0.2, 0.5}},
			{PMID: "9", Aspect: "p", Summary: "Pain.", Indexes: []int{}, Scores: []float32{0.9, 0.2, 0.5}}}, 2},
		{"all negative", map[string]string{"a": "Unknown.", "p": ""}, 0, []dataset.Prediction{
			{PMID: "9", Aspect: "a", Summary: dataset.UnknownSummary, Indexes: []int{}},
			{PMID: "9", Aspect: "p", Summary: dataset.UnknownSummary, Indexes: []int{}}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, p := &fakeSummarizer{sums: tc.sums}, &fakePairs{scores: []float32{0.9, 0.2, 0.5}}
			m := &SumThenTrack[*fakeSummarizer, *fakePairs]{Summarizer: s, Tracker: p, Threshold: tc.threshold}
			got, err := m.Predict("9", doc, []string{"a", "p"})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Predict = %+v, want %+v", got, tc.want)
			}
			for _, r := range s.got {
				if !reflect.DeepEqual(r.Cited, doc) || r.Document != nil {
					t.Errorf("summarizer request %+v: want the whole abstract as its sentences", r)
				}
			}
			if len(p.got) != tc.pairs {
				t.Errorf("%d pairs scored, want %d", len(p.got), tc.pairs)
			}
		})
	}
}

// TestSumThenTrackErrors: a failing or misshapen pair tracker is an error naming the abstract.
func TestSumThenTrackErrors(t *testing.T) {
	s := &fakeSummarizer{sums: map[string]string{"a": "Adults."}}
	for _, tc := range []struct {
		name string
		p    *fakePairs
		want string
	}{
		{"tracker error", &fakePairs{err: errors.New("boom")}, "sum_then_track: abstract 9: boom"},
		{"short scores", &fakePairs{scores: []float32{0.9}}, "1 scores for 2 sentences"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &SumThenTrack[Summarizer, PairTracker]{Summarizer: s, Tracker: tc.p}
			_, err := m.Predict("9", []string{"s0", "s1"}, []string{"a"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// fakeAnswerer answers each aspect with answers[aspect] and reads it with ParseMarked ("CITES").
type fakeAnswerer struct {
	answers map[string]string
	got     []summarizer.Request
}

func (f *fakeAnswerer) Answer(reqs []summarizer.Request, _ decode.Options) ([]string, error) {
	f.got = append(f.got, reqs...)
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = f.answers[r.Aspect]
	}
	return out, nil
}

func (f *fakeAnswerer) ParseAnswer(answer string, n int) Output {
	return ParseMarked(answer, n, "CITES")
}

// TestEndToEndPredict: each answer is read by its answerer's parser, with its repairs listed in
// the prediction and counted in Stats.
func TestEndToEndPredict(t *testing.T) {
	a := &fakeAnswerer{answers: map[string]string{"a": "Adults. CITES 1, 0", "p": "Unknown. CITES 1", "o": "Pain. CITES 7"}}
	m := &EndToEnd[*fakeAnswerer]{S: a}
	doc := []string{"s0", "s1"}
	got, err := m.Predict("9", doc, []string{"a", "p", "o"})
	if err != nil {
		t.Fatal(err)
	}
	want := []dataset.Prediction{
		{PMID: "9", Aspect: "a", Summary: "Adults.", Indexes: []int{0, 1}},
		{PMID: "9", Aspect: "p", Summary: dataset.UnknownSummary, Indexes: []int{}, Problems: []string{ProblemUnknownWithCitations}},
		{PMID: "9", Aspect: "o", Summary: "Pain.", Indexes: []int{}, Problems: []string{ProblemIndexOutOfRange}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Predict = %+v, want %+v", got, want)
	}
	for _, r := range a.got {
		if !reflect.DeepEqual(r.Cited, doc) {
			t.Errorf("answerer request %+v: want the whole abstract", r)
		}
	}
	st := m.Stats()
	if st.Outputs != 3 || st.Repaired != 2 || st.DroppedIndices != 2 || st.Problems[ProblemIndexOutOfRange] != 1 {
		t.Errorf("Stats = %+v", st)
	}
}

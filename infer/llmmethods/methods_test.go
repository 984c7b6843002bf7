package llmmethods

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/llm"
	"github.com/tracksum/tracksum/llm/llmtest"
)

// fakeModel answers each prompt kind of this package in its expected format, so that the tests
// check the wiring (which prompt, how many requests, what is kept); parse_test.go checks the
// parsers on odd answers.
func fakeModel(r llmtest.Received) string {
	p := r.Last()
	switch {
	case strings.Contains(p, "Demonstrations:"):
		return "Summary: The study tests drug Z.\nCitations: [1]"
	case strings.Contains(p, "Do three things"):
		return "Indices: [1]\nKey phrases: [\"drug Z\", \"relapse\"]\nSummary: The study tests drug Z."
	case strings.Contains(p, "Below are sentences about"):
		return "Summary: The study tests drug Z for relapse."
	case strings.Contains(p, "and a summary of"):
		return "Indices: [1, 3]\nKey phrases: [\"relapse\"]"
	case strings.Contains(p, "Do two things"):
		return "Indices: [1]\nKey phrases: [\"drug Z\"]"
	case strings.Contains(p, "in one concise sentence. If the abstract"):
		return "Summary: Drug Z lowers relapse."
	case strings.Contains(p, "List the indices of the sentences that contain"):
		return "Indices: [1, 2]"
	case strings.Contains(p, "Sentences:"):
		return "Summary: Tracked summary."
	}
	return "I do not understand."
}

func newRunner(t *testing.T, srv *llmtest.Server, cache string) *Runner {
	t.Helper()
	c, err := llm.New(llm.Options{BaseURL: srv.URL + "/v1", Model: "m", CacheDir: cache, Concurrency: 2,
		MaxRetries: 2, Backoff: time.Millisecond, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Client: c, Temperature: 1, MaxTokens: 100, Seed: 7, Demos: NewDemos(testDemos, 1)})
}

func TestPredictMethods(t *testing.T) {
	doc := Document{PMID: "9", Sentences: testDoc}
	cases := []struct {
		method   Method
		requests int64
		want     Output
	}{
		{Prompt, 1, Output{Summary: "The study tests drug Z.", Indexes: []int{1}}},
		{Intrinsic, 1, Output{Summary: "The study tests drug Z.", Indexes: []int{1}, Phrases: []string{"drug Z", "relapse"}}},
		{Prior, 2, Output{Summary: "The study tests drug Z for relapse.", Indexes: []int{1}, Phrases: []string{"drug Z"}}},
		{Posthoc, 2, Output{Summary: "Drug Z lowers relapse.", Indexes: []int{1, 3}, Phrases: []string{"relapse"}}},
	}
	for _, tc := range cases {
		srv := llmtest.NewServer(fakeModel)
		cache := t.TempDir()
		r := newRunner(t, srv, cache)
		got, err := r.Predict(context.Background(), tc.method, doc, testAspect)
		if err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		if got.Summary != tc.want.Summary || !slices.Equal(got.Indexes, tc.want.Indexes) ||
			!slices.Equal(got.Phrases, tc.want.Phrases) || (got.Phrases == nil) != (tc.want.Phrases == nil) || len(got.Problems) > 0 {
			t.Errorf("%s: got %+v, want %+v", tc.method, got, tc.want)
		}
		if srv.Requests() != tc.requests {
			t.Errorf("%s: %d requests, want %d", tc.method, srv.Requests(), tc.requests)
		}
		rec := srv.Received()[0]
		if *rec.Temperature != 1 || rec.MaxTokens != 100 || *rec.Seed != 7 || len(rec.Messages) != 1 || rec.Messages[0].Role != "user" {
			t.Errorf("%s: request parameters %+v", tc.method, rec)
		}
		if tc.method == Prompt && !strings.Contains(rec.Last(), "tea cures fever") {
			t.Errorf("prompt: the demonstrations are not in the prompt")
		}
		if rep := r.Report(); rep.Answers != int(tc.requests) || rep.Malformed != 0 {
			t.Errorf("%s: report %+v", tc.method, rep)
		}
		// The cache makes a rerun send no request and give the same output.
		r2 := newRunner(t, srv, cache)
		again, err := r2.Predict(context.Background(), tc.method, doc, testAspect)
		if err != nil || again.Summary != got.Summary || !slices.Equal(again.Indexes, got.Indexes) {
			t.Errorf("%s: rerun %+v, %v", tc.method, again, err)
		}
		if srv.Requests() != tc.requests {
			t.Errorf("%s: the rerun sent %d requests, want 0", tc.method, srv.Requests()-tc.requests)
		}
		srv.Close()
	}
}

func TestPredictEarlyNegativeSavesARequest(t *testing.T) {
	srv := llmtest.NewServer(func(r llmtest.Received) string {
		if strings.Contains(r.Last(), "Do two things") {
			return "Indices: []\nKey phrases: []"
		}
		return "Summary: Unknown."
	})
	defer srv.Close()
	r := newRunner(t, srv, "")
	for _, m := range []Method{Prior, Posthoc} {
		before := srv.Requests()
		got, err := r.Predict(context.Background(), m, Document{PMID: "9", Sentences: testDoc}, testAspect)
		if err != nil {
			t.Fatal(err)
		}
		if got.Summary != dataset.UnknownSummary || len(got.Indexes) != 0 || got.Phrases == nil || len(got.Phrases) != 0 {
			t.Errorf("%s: got %+v, want the negative prediction", m, got)
		}
		if n := srv.Requests() - before; n != 1 {
			t.Errorf("%s: %d requests, want 1", m, n)
		}
	}
}

func TestPredictMalformedAndRefusedAreCountedNotFatal(t *testing.T) {
	srv := llmtest.NewServer(func(llmtest.Received) string { return "Summary: S.\nCitations: [1, 7]" })
	defer srv.Close()
	r := newRunner(t, srv, "")
	doc := Document{PMID: "9", Sentences: testDoc}
	got, err := r.Predict(context.Background(), Prompt, doc, testAspect)
	if err != nil || got.Summary != "S." || !slices.Equal(got.Indexes, []int{1}) || !slices.Equal(got.Problems, []string{ProblemIndexOutOfRange}) {
		t.Fatalf("out-of-range citation: %+v, %v", got, err)
	}
	// A refusal, three times (the first answer and both retries): read as "Unknown.", counted.
	refusal := llmtest.Reply{Content: "I'm sorry, but I can't help with medical texts."}
	srv.Script(refusal, refusal, refusal)
	got, err = r.Predict(context.Background(), Intrinsic, doc, testAspect)
	if err != nil || got.Summary != dataset.UnknownSummary || len(got.Indexes) != 0 || !slices.Equal(got.Problems, []string{ProblemRefused}) {
		t.Fatalf("refusal: %+v, %v", got, err)
	}
	rep := r.Report()
	if rep.Answers != 2 || rep.Malformed != 2 || rep.Problems[ProblemRefused] != 1 || rep.Problems[ProblemIndexOutOfRange] != 1 {
		t.Errorf("report %+v", rep)
	}
	if s := rep.String(); !strings.Contains(s, "2 malformed (1 index_out_of_range, 1 refused)") {
		t.Errorf("report line %q", s)
	}
}

func TestPredictEndpointFailureIsAnError(t *testing.T) {
	srv := llmtest.NewServer(fakeModel)
	defer srv.Close()
	r := newRunner(t, srv, "")
	srv.Script(llmtest.Reply{Status: 503, RetryAfter: "0"}, llmtest.Reply{Status: 503, RetryAfter: "0"}, llmtest.Reply{Status: 503, RetryAfter: "0"})
	_, err := r.Predict(context.Background(), Intrinsic, Document{PMID: "9", Sentences: testDoc}, testAspect)
	var se *llm.StatusError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "abstract 9, aspect a") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("err = %v", err)
	}
}

func TestTrackAndSummarize(t *testing.T) {
	srv := llmtest.NewServer(fakeModel)
	defer srv.Close()
	r := newRunner(t, srv, "")
	idx, err := r.Track(context.Background(), Document{PMID: "9", Sentences: testDoc}, testAspect)
	if err != nil || !slices.Equal(idx, []int{1, 2}) {
		t.Fatalf("Track = %v, %v", idx, err)
	}
	s, err := r.Summarize(context.Background(), testAspect, testDoc[1:3], testDoc)
	if err != nil || s != "Tracked summary." {
		t.Fatalf("Summarize = %q, %v", s, err)
	}
	if p := srv.Received()[1].Last(); !strings.Contains(p, "Full abstract:") {
		t.Errorf("full context not in the summarizer prompt")
	}
	if rep := r.Report(); rep.Answers != 2 || rep.Malformed != 0 {
		t.Errorf("report %+v", rep)
	}
}

func TestDemosSeededAndExcludeSelf(t *testing.T) {
	var pool []dataset.Instance
	for _, p := range []string{"1", "2", "3", "4", "5", "6"} {
		pool = append(pool, dataset.Instance{PMID: p, Aspect: "a", Document: []string{"x"}, Summary: "S.", Indexes: []int{0}})
		pool = append(pool, dataset.Instance{PMID: p + "n", Aspect: "a", Document: []string{"x"}, Summary: "Unknown.", Indexes: []int{}})
	}
	a, b := NewDemos(pool, 1), NewDemos(slices.Clone(pool), 1)
	da, db := a.Pick("a", "x"), b.Pick("a", "x")
	if len(da) != 2 || da[0].PMID != db[0].PMID || da[1].PMID != db[1].PMID || da[0].IsNegative() || !da[1].IsNegative() {
		t.Fatalf("same seed: %v vs %v", da, db)
	}
	self := a.Pick("a", da[0].PMID)
	if self[0].PMID == da[0].PMID {
		t.Errorf("an abstract got itself as its demonstration")
	}
	differs := false
	for seed := int64(2); seed < 10; seed++ {
		if NewDemos(pool, seed).Pick("a", "x")[0].PMID != da[0].PMID {
			differs = true
		}
	}
	if !differs {
		t.Error("the seed does not change the demonstrations")
	}
	if got := a.Pick("i", "x"); len(got) != 0 {
		t.Errorf("aspect without demonstrations: %v", got)
	}
}

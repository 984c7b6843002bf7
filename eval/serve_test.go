package eval_test

// The tests against a real tracksum-serve live in the external test package: serve loads its
// models through infer, which imports eval, so eval's own tests cannot import serve.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tracksum/tracksum/eval"
	"github.com/tracksum/tracksum/serve"
	"github.com/tracksum/tracksum/serve/servetest"
)

func TestMain(m *testing.M) { os.Exit(servetest.Main(m)) }

// TestLLMMetricsAgainstTrackSumServe runs fm and qa against a real tracksum-serve on a tiny model:
// its answers follow the serving convention, not the metrics' formats, so they are counted as
// malformed and the metrics get no score; with eval.llm.allow_malformed the run completes, a rerun
// is answered from the cache without any request, and without it the run fails.
func TestLLMMetricsAgainstTrackSumServe(t *testing.T) {
	o := serve.DefaultOptions()
	o.ModelName = "tiny"
	url, srv := servetest.Start(t, o)
	cfg := eval.LLMConfig(t, url)
	cfg.Eval.LLM.Model = "tiny"
	cfg.Eval.LLM.AllowMalformed = true
	run := func() *eval.Outcome {
		out, err := eval.Run(context.Background(), eval.Options{Pred: "testdata/pred.jsonl", Ref: "testdata/ref.jsonl", Out: filepath.Join(t.TempDir(), "eval"), Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := run()
	served := srv.Stats().Served
	if first.LLMReport.Client.Requests == 0 || served != first.LLMReport.Client.Requests {
		t.Errorf("first run: client %+v, server served %d", first.LLMReport.Client, served)
	}
	if first.LLMReport.Malformed == 0 {
		t.Errorf("a seq2seq summarizer answered every metric prompt in format?")
	}
	for _, s := range first.LLMReport.Overall {
		if s.Mean == s.Mean {
			t.Errorf("%s: mean %v from mostly malformed answers, want none", s.Name, s.Mean)
		}
	}
	second := run()
	if c := second.LLMReport.Client; c.Requests != 0 || c.CacheHits != c.Calls || c.Calls != first.LLMReport.Client.Calls {
		t.Errorf("rerun: client %+v, want every call from the cache", c)
	}
	if srv.Stats().Served != served {
		t.Errorf("the server got %d requests on the rerun", srv.Stats().Served-served)
	}
	cfg.Eval.LLM.AllowMalformed = false
	if _, err := eval.Run(context.Background(), eval.Options{Pred: "testdata/pred.jsonl", Ref: "testdata/ref.jsonl", Config: cfg}); !errors.Is(err, eval.ErrMalformedAnswers) {
		t.Errorf("without eval.llm.allow_malformed: err %v, want ErrMalformedAnswers", err)
	}
}

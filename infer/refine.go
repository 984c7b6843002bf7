package infer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval"
	"github.com/tracksum/tracksum/eval/qaeval"
	"github.com/tracksum/tracksum/llm"
)

// RefineStats reports what refinement did.
type RefineStats struct {
	// Refined is the number of positive predictions refinement ran on; Improved those whose
	// kept summary is a revision; Rounds the revisions asked for in all.
	Refined, Improved, Rounds int
	Elapsed                   time.Duration
	Client                    llm.Stats
}

// Refine runs LongSumEval's feedback-driven refinement (package eval/qaeval) on every positive
// prediction, for at most rounds revisions each, through the endpoint of eval.llm with the model
// infer.llm.model (default eval.llm.model) and the settings eval.qa.*. Each prediction's Summary
// becomes the best summary found and its Refinement field keeps every round (summary, scores,
// feedback) for inspection. Coverage questions come from the whole abstract (eval.qa.source:
// document, the paper's rule) or the prediction's cited sentences (cited); consistency is checked
// against the whole abstract. Revisions go on until the targets are met or the rounds are spent
// (Algorithm 2), or stop at the first that does not help with eval.qa.early_stop. Negative
// predictions ("Unknown.") are left as they are.
func Refine(ctx context.Context, cfg *config.Config, abstracts []Abstract, preds []dataset.Prediction, rounds int, log io.Writer) (*RefineStats, error) {
	opts := cfg.Eval.LLM.ClientOptions(cfg.Infer.LLM.Model)
	if opts.Model == "" {
		return nil, fmt.Errorf("--refine: needs a model: --llm-model, infer.llm.model or eval.llm.model")
	}
	client, err := llm.New(opts)
	if err != nil {
		return nil, fmt.Errorf("--refine: %w (eval.llm.base_url)", err)
	}
	docs := map[string][]string{}
	for _, a := range abstracts {
		docs[a.PMID] = a.Document
	}
	var todo []int
	for i := range preds {
		if !dataset.IsUnknownSummary(preds[i].Summary) {
			todo = append(todo, i)
		}
	}
	m := qaeval.New(client, eval.QAOptions(cfg.Eval.QA))
	start := time.Now()
	st := &RefineStats{Refined: len(todo)}
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range max(1, min(client.Concurrency(), len(todo))) {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= len(todo) || ctx.Err() != nil {
					return
				}
				p := &preds[todo[k]]
				doc := docs[p.PMID]
				source := strings.Join(doc, " ")
				if cfg.Eval.QA.Source == "cited" {
					var cited []string
					for _, j := range p.Indexes {
						if j >= 0 && j < len(doc) {
							cited = append(cited, doc[j])
						}
					}
					source = strings.Join(cited, " ")
				}
				r, err := m.Refine(ctx, eval.AspectFocus(p.Aspect), source, strings.Join(doc, " "), p.Summary, rounds)
				var record json.RawMessage
				if err == nil {
					record, err = refinementJSON(r)
				}
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("--refine: PMID %s aspect %s: %w", p.PMID, p.Aspect, err)
						cancel()
					}
					mu.Unlock()
					return
				}
				p.Refinement = record
				p.Summary = r.Final()
				st.Rounds += len(r.Rounds) - 1
				if r.Best > 0 {
					st.Improved++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.Elapsed, st.Client = time.Since(start), client.Stats()
	fmt.Fprintf(log, "infer: refine: %d predictions, %d revisions asked, %d improved in %.1fs; %s\n",
		st.Refined, st.Rounds, st.Improved, st.Elapsed.Seconds(), st.Client)
	return st, nil
}

// refinementJSON encodes a refinement record for dataset.Prediction.Refinement the way the
// predictions file is written (no HTML escaping), so the file holds it byte for byte as if the
// record were a field of its own.
func refinementJSON(r *qaeval.Refinement) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

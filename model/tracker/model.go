package tracker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/subword"
)

// scoreBatch is the most sentences scored in one graph call.
const scoreBatch = 64

// Model is a tracker ready to score sentences: hyperparameters, tokenizer and variables. It is safe
// for concurrent use (calls are serialised).
type Model struct {
	hp      *Hyperparams
	tok     *subword.Tokenizer
	backend compute.Backend
	store   *gomlxmodel.Store
	mu      sync.Mutex
	exec    *gomlxmodel.Exec
	// context, when not nil, rescores each instance's probabilities (ScoreBatch, ScoreSplit).
	context *ContextRescorer
	// lexical, when not nil, is the model (architecture lexical-context): it scores the sentences'
	// text and there is no network (backend, store and exec are nil).
	lexical *LexicalBaseline
}

// newModel wraps a store whose /model variables hold (or will hold) the tracker's weights.
func newModel(backend compute.Backend, hp *Hyperparams, tok *subword.Tokenizer, store *gomlxmodel.Store) (*Model, error) {
	exec, err := gomlxmodel.NewExec(backend, store, func(root *gomlxmodel.Scope, ids, aspect, pos *graph.Node) *graph.Node {
		return graph.Sigmoid(LogitsGraph(root.Store().Scope(model.ModelScope), hp, ids, aspect, pos))
	})
	if err != nil {
		return nil, err
	}
	exec.SetMaxCache(-1)
	return &Model{hp: hp, tok: tok, backend: backend, store: store, exec: exec}, nil
}

// Load rebuilds a tracker from a checkpoint directory written by Train (hparams.json,
// tokenizer.json, best/model.safetensors, and context.json when it was trained with
// tracker.context_rescoring; for architecture lexical-context, lexical.json and context.json
// instead of the variables); it needs nothing else. The backend is model.Backend().
func Load(dir string) (*Model, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrCheckpoint, dir)
	}
	return load(dir, checkpoint.DirFiles(dir))
}

// load is Load of the checkpoint dir whose metadata, tokenizer and context files r reads (an
// opened manifest: the bytes it verified, not read again).
func load(dir string, r checkpoint.Reader) (*Model, error) {
	hp, err := readHyperparamsFrom(dir, r)
	if err != nil {
		return nil, err
	}
	tokPath := filepath.Join(dir, checkpoint.TokenizerFile)
	tokBytes, err := r.ReadFile(checkpoint.TokenizerFile)
	if err != nil {
		return nil, fmt.Errorf("%w: read tokenizer: %w", ErrCheckpoint, err)
	}
	tok, err := subword.Parse(tokPath, tokBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if tok.VocabSize() != hp.VocabSize {
		return nil, fmt.Errorf("%w: %s: tokenizer has %d ids, hparams.json says %d", ErrCheckpoint, dir, tok.VocabSize(), hp.VocabSize)
	}
	if hp.Architecture == ArchLexicalContext {
		b, err := readLexical(dir, r, len(hp.Aspects))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
		}
		return &Model{hp: hp, tok: tok, lexical: b, context: b.Context}, nil
	}
	backend, _, err := model.Backend()
	if err != nil {
		return nil, err
	}
	store := gomlxmodel.NewStore()
	varsPath := checkpoint.BestWeights(dir)
	if err := model.LoadVariablesInto(store, varsPath, nil); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no %s (training has not reached its first evaluation)", ErrCheckpoint, dir, filepath.Join(checkpoint.BestDir, checkpoint.BestVariables))
		}
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	m, err := newModel(backend, hp, tok, store)
	if err != nil {
		return nil, err
	}
	if err := m.checkVariables(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCheckpoint, varsPath, err)
	}
	if m.context, err = readContextRescorerFrom(dir, r, len(hp.Aspects)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return m, nil
}

// checkVariables builds the scoring graph once and verifies that every variable it needs came
// from the checkpoint (a variable created now would be randomly initialised).
func (m *Model) checkVariables() error {
	before := map[string]bool{}
	for v := range m.store.IterVariables() {
		before[v.Path()] = true
	}
	if _, err := m.ScoreExamples([]Example{{IDs: []int32{1}}}); err != nil {
		return err
	}
	for v := range m.store.IterVariables() {
		if !before[v.Path()] && v.Path() != "/"+gomlxmodel.RNGStateVariableName {
			return fmt.Errorf("variable %s missing from the checkpoint", v.Path())
		}
	}
	return nil
}

// Hyperparams returns a copy of the model's hyperparameters.
func (m *Model) Hyperparams() Hyperparams { return *m.hp }

// Tokenizer returns the model's tokenizer.
func (m *Model) Tokenizer() *subword.Tokenizer { return m.tok }

// Lexical returns the model of a lexical-context tracker, nil for a network.
func (m *Model) Lexical() *LexicalBaseline { return m.lexical }

// Context returns the model's context rescorer, nil when it has none.
func (m *Model) Context() *ContextRescorer { return m.context }

// Threshold returns the decision threshold the model was trained with (tracker.threshold).
func (m *Model) Threshold() float64 { return m.hp.Threshold }

// Request is one abstract (its sentences) and an aspect, by code ("o") or name ("Outcomes").
type Request struct {
	Doc    []string
	Aspect string
}

// Score returns, for each sentence of doc, the probability that it is relevant to aspect (code or
// name).
func (m *Model) Score(doc []string, aspect string) ([]float32, error) {
	out, err := m.ScoreBatch([]Request{{Doc: doc, Aspect: aspect}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// ScoreBatch scores several requests at once (sentences of all requests share graph calls). Each
// request is one instance: with a context rescorer, its sentences are rescored together, so a
// request must hold the whole abstract.
func (m *Model) ScoreBatch(reqs []Request) ([][]float32, error) {
	var exs []Example
	for ri, r := range reqs {
		a, ok := m.hp.AspectIndex(r.Aspect)
		if !ok {
			return nil, fmt.Errorf("tracker: request %d: unknown aspect %q (model knows %v)", ri, r.Aspect, m.hp.Aspects)
		}
		for i, s := range r.Doc {
			exs = append(exs, m.example(s, i, len(r.Doc), a))
		}
	}
	probs, err := m.ScoreExamples(exs)
	if err != nil {
		return nil, err
	}
	if m.context != nil {
		if err := m.context.rescoreRequests(probs, exs, reqs); err != nil {
			return nil, err
		}
	}
	return perRequest(probs, reqs, func(r Request) []string { return r.Doc }), nil
}

// perRequest cuts probs, the scores of every sentence of reqs in order, into one slice per
// request (its capacity ends with it: appending to one never overwrites the next).
func perRequest[R any](probs []float32, reqs []R, doc func(R) []string) [][]float32 {
	out := make([][]float32, len(reqs))
	k := 0
	for i, r := range reqs {
		n := len(doc(r))
		out[i] = probs[k : k+n : k+n]
		k += n
	}
	return out
}

// example tokenizes sentence i of an n-sentence abstract exactly as prepare does for TrackerRow.
func (m *Model) example(sentence string, i, n, aspect int) Example {
	ids := m.tok.Encode(sentence)
	return Example{IDs: truncate(ids, m.hp.MaxTokens()), Aspect: int32(aspect), Pos: PositionFeatures(i, n), Text: sentence}
}

func truncate(ids []int32, n int) []int32 {
	if len(ids) > n {
		return ids[:n]
	}
	return ids
}

// ScoreSplit returns the probability of each row of s as ScoreBatch gives it for the row's
// abstract: ScoreExamples, then the context rescorer (when the model has one) over the rows of
// each instance (s.Keys), which must all be in s.
func (m *Model) ScoreSplit(s SplitData) ([]float32, error) {
	probs, err := m.ScoreExamples(s.Examples)
	if err != nil || m.context == nil {
		return probs, err
	}
	return m.context.Rescore(Logits(probs), s.Examples, s.Keys)
}

// ScoreExamples returns the probability of each example, in order, from the network alone (no
// context rescoring: an example is scored without its abstract). Examples are grouped by padded
// length and scored in batches of at most 64 (rows padded to a power of two), deterministically:
// the same examples give bit-identical probabilities from the same variables.
func (m *Model) ScoreExamples(exs []Example) ([]float32, error) {
	if m.lexical != nil {
		// Read-only: no lock needed. The lexical tracker reads Text, not the subword ids.
		return m.lexical.scoreExamples(exs), nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]float32, len(exs))
	for _, grp := range lengthGroups(exs, m.hp.MaxTokens()) {
		for i := 0; i < len(grp); i += scoreBatch {
			idx := grp[i:min(i+scoreBatch, len(grp))]
			sub := make([]Example, len(idx))
			for j, k := range idx {
				sub[j] = exs[k]
			}
			T := bucketLen(padTokens(exs, idx), m.hp.MaxTokens())
			ids, aspect, pos, _, _, _ := batchTensors(sub, T, scoreRows(len(sub)))
			p, err := m.exec.Call1(ids, aspect, pos)
			if err != nil {
				return nil, fmt.Errorf("tracker: score: %w", err)
			}
			flat, err := tensors.CopyFlatData[float32](p)
			if err != nil {
				return nil, fmt.Errorf("tracker: score: %w", err)
			}
			for j, k := range idx {
				out[k] = flat[j]
			}
		}
	}
	return out, nil
}

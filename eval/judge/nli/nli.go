// Package nli is the evaluator's nli judge: an offline NLI cross-encoder — a local Hugging Face
// sequence-classification snapshot of the BERT, RoBERTa or DeBERTa-v2/v3 family (hf/encoder), e.g.
// a PubMedBERT or RoBERTa-large fine-tuned on MNLI/MedNLI, or cross-encoder/nli-deberta-v3-base —
// deciding whether a premise entails a hypothesis. Users bring the weights; nothing is downloaded.
//
// Entails(premise, hypothesis) is the softmax probability of the entailment label, read from
// config.json's id2label (3-way entailment/neutral/contradiction or 2-way
// entailment/not-entailment), compared with a threshold. The premise and hypothesis are whatever
// the evaluator passes (eval/score.go: a summary for the claim metrics, a cited sentence for the
// citation metrics); the hypothesis is a claim of the lexical judge's decomposition (Decompose is
// the lexical judge's: an NLI model does not decompose). A pair is encoded as the model's
// tokenizer does it (BERT's and DeBERTa's [CLS] P [SEP] H [SEP], RoBERTa's <s> P </s></s> H </s>).
// The length limit is the model's positions (less RoBERTa's offset) or tokenizer_config.json's
// model_max_length when smaller; a DeBERTa without absolute positions (v3) has none of its own,
// so model_max_length, else 512. A premise too long for that is cut into chunks of whole
// sentences, each as long as fits beside the hypothesis (a single sentence longer than that is
// truncated at its end), and the premise entails the hypothesis when any chunk does: the
// probability is the largest over the chunks, as SummaC-style and ALCE-style evaluations
// aggregate.
//
// The judge is a judge.Batcher: the evaluator hands it every pair of many instances in one
// EntailsAll call, whose pairs not yet cached are sorted by length and run in full forward passes
// of BatchSize rows (two passes at once where two CPUs are; pairs of concurrent callers share passes too). Passes are
// padded to a few shapes (rows BatchSize or a power of two, lengths in steps of 64 tokens) so that
// few graphs are built. Every probability is cached on disk under a key made of the model's
// identity (ModelSHA256: the weights, config.json with its label map, the tokenizer files, the
// length limit and the entailment label), the premise chunk and the hypothesis, so a rerun computes
// nothing and an edited snapshot computes afresh. An entry that is not byte for byte what the judge
// writes for its key is a miss (and is rewritten); a cache directory that cannot be written is
// turned off with one line on Options.Log.
//
// # Example
//
//	j, err := nli.New(ctx, nli.Options{Dir: "/models/roberta-large-mnli", Threshold: 0.5, BatchSize: 16,
//		CacheDir: ".cache/tracksum-nli", Decomposer: judge.NewLexical(judge.LexicalOptions{Threshold: 0.6, MinClauseWords: 2})})
//	ok, err := j.Entails(ctx, "The trial enrolled 151 patients.", "151 patients took part.")
package nli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/eval/judge"
	"github.com/tracksum/tracksum/hf/encoder"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/tokenizer"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model"
)

// Options configure the nli judge (config keys eval.nli.*).
type Options struct {
	// Dir is the snapshot directory: config.json (model_type bert, roberta or deberta-v2, id2label),
	// model.safetensors with the classification head, tokenizer.json, tokenizer_config.json.
	Dir string
	// Threshold: entailment probability >= Threshold counts as support.
	Threshold float64
	// BatchSize is the number of pairs per forward pass (and the judge's Concurrency).
	BatchSize int
	// MaxLength bounds a pair's tokens; 0 means the model's limit (see config.EvalNLI).
	MaxLength int
	// CacheDir holds the cached probabilities; empty disables the disk cache.
	CacheDir string
	// Log receives the one line saying that the disk cache is off and why (a CacheDir that is a
	// file, read-only or full); os.Stderr when nil.
	Log io.Writer
	// Decomposer splits summaries into claims (the lexical judge).
	Decomposer judge.Judge
	// Backend runs the model; nil means the process-wide one (model.Backend). The GPU check sets
	// it to compare the card's probabilities with the pure-Go backend's in one process.
	Backend compute.Backend
}

// ErrLabels marks a config.json whose id2label is not an NLI label set.
var ErrLabels = errors.New("not an NLI label set")

// Stats says what the judge did so far.
type Stats struct {
	// Pairs is the number of (premise chunk, hypothesis) probabilities asked for.
	Pairs int64 `json:"pairs"`
	// CacheHits is how many of them came from the cache (memory or disk).
	CacheHits int64 `json:"cache_hits"`
	// Computed is how many the model computed, in Batches forward passes.
	Computed int64 `json:"computed"`
	Batches  int64 `json:"batches"`
	// Chunked is the number of premises cut into more than one chunk.
	Chunked int64 `json:"chunked"`
	// Graphs is the number of distinct (rows, tokens) shapes of the forward passes: the graphs
	// built (each new shape costs a graph build).
	Graphs int64 `json:"graphs"`
	// Rows and Tokens are the padded rows and row-tokens of all passes (Rows*tokens summed):
	// Tokens against the computed pairs' own tokens says how much padding cost.
	Rows   int64 `json:"rows"`
	Tokens int64 `json:"tokens"`
}

// String is a one-line summary.
func (s Stats) String() string {
	return fmt.Sprintf("%d pairs, %d cache hits, %d computed in %d batches (%d rows, %d graphs), %d premises chunked",
		s.Pairs, s.CacheHits, s.Computed, s.Batches, s.Rows, s.Graphs, s.Chunked)
}

// Judge is the nli judge. It is safe for concurrent use.
type Judge struct {
	opts   Options
	name   string
	tok    *tokenizer.Tokenizer
	sp     encoder.PairTokens
	pad    int32
	maxLen int
	entail int // index of the entailment label
	labels int
	digest string            // the weights' SHA-256
	files  map[string]string // the SHA-256 of the snapshot's other files that shape the model (snapshot.ShapingFiles)
	ident  string            // ModelSHA256
	exec   *gomlxmodel.Exec
	log    io.Writer

	cacheOff atomic.Bool // the disk cache was found unusable (said once, on log)

	mu      sync.Mutex
	memo    map[string]float64
	queue   []*request
	running chan struct{}   // a slot per forward pass that may run at once (passes)
	shapes  map[[2]int]bool // the shapes run so far (under mu)

	pairs, hits, computed, batches, chunked, graphs, rows, tokens atomic.Int64
}

// request is one pair waiting for its probability.
type request struct {
	key      string
	premise  string
	hyp      string
	ids      []int32
	types    []int32
	p        float64
	err      error
	finished chan struct{}
}

// New loads the snapshot and its tokenizer (ctx cancels the reading of the weights); a snapshot of another family, without a
// classification head, or with labels that are not an NLI label set is a one-line error naming
// the file.
func New(ctx context.Context, opts Options) (*Judge, error) {
	if opts.Dir == "" {
		return nil, errors.New("nli judge: no snapshot directory (eval.nli.model, --nli-model DIR)")
	}
	if opts.Decomposer == nil {
		return nil, errors.New("nli judge: no decomposer")
	}
	opts.BatchSize = max(1, opts.BatchSize)
	snap, err := snapshot.Open(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	cfg, err := encoder.ConfigOf(snap)
	if err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	entail, labels, err := readLabels(filepath.Join(snap.Dir, snapshot.ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	tok, err := tokenizer.Load(snap.Dir)
	if err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	if err := tok.CheckFits(cfg.Vocab, snap.Dir); err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	sp, err := encoder.PairTokensOf(tok)
	if err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	store := gomlxmodel.NewStore()
	m, err := encoder.Load(ctx, snap, store, encoder.LoRA{}, 0)
	if err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	if n := m.SavedLabels(); n == 0 {
		return nil, fmt.Errorf("nli judge: %s has no sequence-classification head (classifier.weight, or classifier.dense and classifier.out_proj): not an NLI model", filepath.Join(snap.Dir, snapshot.WeightsFile))
	} else if n != labels {
		return nil, fmt.Errorf("nli judge: %s: id2label has %d labels but the classifier has %d", filepath.Join(snap.Dir, snapshot.ConfigFile), labels, n)
	}
	if err := m.AddClassifier(labels, 0); err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	maxLen := cfg.MaxTokens()
	if ml := modelMaxLength(snap.Dir); ml > 0 && (maxLen == 0 || ml < maxLen) {
		maxLen = ml
	}
	if maxLen == 0 {
		// A DeBERTa without absolute positions (DeBERTa-v3: position_biased_input false) has no
		// limit of its own, and its tokenizer_config.json sets none: 512, its training length.
		maxLen = 512
	}
	if opts.MaxLength > 0 {
		maxLen = min(maxLen, opts.MaxLength)
	}
	if maxLen < sp.Overhead()+2 {
		return nil, fmt.Errorf("nli judge: %s: %d tokens per pair leave no room for a premise and a hypothesis", snap.Dir, maxLen)
	}
	digest, err := snap.WeightsSHA256(ctx)
	if err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	files, err := snap.FileDigests()
	if err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	backend := opts.Backend
	if backend == nil {
		if backend, _, err = model.Backend(); err != nil {
			return nil, fmt.Errorf("nli judge: %w", err)
		}
	}
	exec, err := gomlxmodel.NewExec(backend, store, func(scope *gomlxmodel.Scope, ids, types, mask *Node) *Node {
		return m.Classify(scope, m.Pooled(scope, m.Hidden(scope, ids, types, mask)))
	})
	if err != nil {
		return nil, fmt.Errorf("nli judge: %w", err)
	}
	exec.SetMaxCache(-1)
	j := &Judge{opts: opts, name: "nli:" + filepath.Base(filepath.Clean(snap.Dir)), tok: tok, sp: sp,
		pad: int32(cfg.PadTokenID), maxLen: maxLen, entail: entail, labels: labels, digest: digest, files: files,
		ident: modelIdentity(digest, files, maxLen, entail, labels), exec: exec, log: opts.Log,
		memo: map[string]float64{}, shapes: map[[2]int]bool{}, running: make(chan struct{}, passes())}
	if j.log == nil {
		j.log = os.Stderr
	}
	if opts.CacheDir != "" {
		if err := probeCacheDir(opts.CacheDir); err != nil {
			j.turnCacheOff(err)
		}
	}
	return j, nil
}

// modelIdentity is the SHA-256 of everything that shapes the judge's probabilities: the weights,
// the other files of the snapshot that the model and its tokenizer read (config.json with its
// architecture, activation, epsilon and id2label; tokenizer.json with its normalizer;
// tokenizer_config.json), by name, and the judge's own settings that change a probability (the
// length limit a pair is cut to, the entailment label, the number of labels). The texts of a pair
// are not in it: they complete a cache key (entryKey).
func modelIdentity(weights string, files map[string]string, maxLen, entail, labels int) string {
	h := sha256.New()
	fmt.Fprintf(h, "tracksum-nli model v2\x00weights\x00%s\x00", weights)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(h, "file\x00%s\x00%s\x00", name, files[name])
	}
	fmt.Fprintf(h, "max_length\x00%d\x00entailment\x00%d\x00labels\x00%d", maxLen, entail, labels)
	return hex.EncodeToString(h.Sum(nil))
}

// probeCacheDir checks that dir is a directory the judge can write into, by creating (and
// removing) a small file in it: a path that is a file or a device, a read-only or full file
// system fail here rather than at every entry.
func probeCacheDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	defer os.Remove(name)
	if _, err := f.Write(make([]byte, 512)); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", name, err)
	}
	return f.Close()
}

// turnCacheOff stops reading and writing the disk cache, saying so once on the log: a cache that
// cannot be written would otherwise cost a failed write per pair, silently, run after run.
func (j *Judge) turnCacheOff(err error) {
	if j.cacheOff.CompareAndSwap(false, true) {
		fmt.Fprintf(j.log, "nli judge: disk cache %s off, every pair is computed: %v\n", j.opts.CacheDir, err)
	}
}

// readLabels returns the index of the entailment label and the number of labels of config.json's
// id2label: {entailment, neutral, contradiction} or {entailment, not-entailment}, in any order
// and spelling of case, "_", "-" and spaces.
func readLabels(path string) (entail, n int, err error) {
	var c struct {
		ID2Label map[string]string `json:"id2label"`
	}
	if err := atomicio.ReadJSON(path, &c, false); err != nil {
		return 0, 0, err // names the file
	}
	names := map[string]int{}
	ids := make([]string, 0, len(c.ID2Label))
	for id := range c.ID2Label {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var shown []string
	for _, id := range ids {
		shown = append(shown, id+":"+c.ID2Label[id])
	}
	fail := func() (int, int, error) {
		return 0, 0, fmt.Errorf("%s: id2label {%s} is %w (want entailment/neutral/contradiction or entailment/not_entailment)",
			path, strings.Join(shown, ", "), ErrLabels)
	}
	for _, id := range ids {
		var i int
		if _, err := fmt.Sscanf(id, "%d", &i); err != nil || i < 0 || i >= len(ids) || fmt.Sprint(i) != id {
			return fail()
		}
		name := strings.Map(func(r rune) rune {
			if r == '_' || r == '-' || r == ' ' {
				return -1
			}
			return r
		}, strings.ToLower(c.ID2Label[id]))
		if name == "nonentailment" {
			name = "notentailment"
		}
		if _, dup := names[name]; dup {
			return fail()
		}
		names[name] = i
	}
	_, e := names["entailment"]
	_, ne := names["neutral"]
	_, co := names["contradiction"]
	_, no := names["notentailment"]
	switch {
	case len(names) == 3 && e && ne && co, len(names) == 2 && e && no:
		return names["entailment"], len(names), nil
	}
	return fail()
}

// modelMaxLength is tokenizer_config.json's model_max_length, or 0 when absent or unset (the
// tokenizers' "very large" placeholder).
func modelMaxLength(dir string) int {
	var c struct {
		ModelMaxLength float64 `json:"model_max_length"`
	}
	// An unreadable file is no limit here: the tokenizer's own reading of it reports it.
	if atomicio.ReadJSON(filepath.Join(dir, snapshot.TokenizerConfigFile), &c, false) != nil || c.ModelMaxLength <= 0 || c.ModelMaxLength > 1<<20 {
		return 0
	}
	return int(c.ModelMaxLength)
}

// Name implements judge.Judge.
func (j *Judge) Name() string { return j.name }

// Concurrency implements judge.Judge: enough concurrent callers to fill a batch.
func (j *Judge) Concurrency() int { return j.opts.BatchSize }

// Decompose implements judge.Judge with the decomposer (the lexical judge's decomposition).
func (j *Judge) Decompose(ctx context.Context, summary string) ([]string, error) {
	return j.opts.Decomposer.Decompose(ctx, summary)
}

// MaxLength is the number of tokens of a pair the judge feeds the model.
func (j *Judge) MaxLength() int { return j.maxLen }

// WeightsSHA256 is the SHA-256 of the snapshot's weights.
func (j *Judge) WeightsSHA256() string { return j.digest }

// FileSHA256s returns the SHA-256 of each of the snapshot's files besides the weights that shape
// the model or its tokenizer (config.json, tokenizer.json, ...), by file name.
func (j *Judge) FileSHA256s() map[string]string {
	out := make(map[string]string, len(j.files))
	for k, v := range j.files {
		out[k] = v
	}
	return out
}

// ModelSHA256 is the judge's identity: a SHA-256 over the weights, FileSHA256s, MaxLength and the
// label map, the part of every cache key that is not the texts. Two judges with the same identity
// give the same probabilities.
func (j *Judge) ModelSHA256() string { return j.ident }

// Stats returns what the judge did so far.
func (j *Judge) Stats() Stats {
	return Stats{Pairs: j.pairs.Load(), CacheHits: j.hits.Load(), Computed: j.computed.Load(),
		Batches: j.batches.Load(), Chunked: j.chunked.Load(), Graphs: j.graphs.Load(), Rows: j.rows.Load(),
		Tokens: j.tokens.Load()}
}

// Entails implements judge.Judge: the largest entailment probability over the premise's chunks
// is at least the threshold.
func (j *Judge) Entails(ctx context.Context, premise, hypothesis string) (bool, error) {
	p, err := j.Probability(ctx, premise, hypothesis)
	if err != nil {
		return false, err
	}
	return p >= j.opts.Threshold, nil
}

// EntailsAll implements judge.Batcher: the verdicts of Entails on every pair, computed together
// (see Probabilities).
func (j *Judge) EntailsAll(ctx context.Context, pairs []judge.Pair) ([]bool, error) {
	ps, err := j.Probabilities(ctx, pairs)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(ps))
	for i, p := range ps {
		out[i] = p >= j.opts.Threshold
	}
	return out, nil
}

// Probability returns the entailment probability of hypothesis given premise: the largest over
// the premise's chunks; 0 for an empty premise or hypothesis.
func (j *Judge) Probability(ctx context.Context, premise, hypothesis string) (float64, error) {
	ps, err := j.Probabilities(ctx, []judge.Pair{{Premise: premise, Hypothesis: hypothesis}})
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

// Probabilities returns Probability of every pair, computed together: the (chunk, hypothesis)
// pairs not cached, each once however often it occurs, are sorted by length (longest first, so
// that a pass holds pairs of similar lengths and little padding) and run in passes of BatchSize
// rows. The probabilities are those of one pair at a time (the rows of a pass do not interact; a
// pair's padding is masked).
func (j *Judge) Probabilities(ctx context.Context, pairs []judge.Pair) ([]float64, error) {
	out := make([]float64, len(pairs))
	type chunkOf struct{ pair, req int } // a chunk of pairs[pair] computed by todo[req]
	var need []chunkOf
	var todo []*request
	queued := map[string]int{}
	for i, pr := range pairs {
		premise, hypothesis := strings.TrimSpace(pr.Premise), strings.TrimSpace(pr.Hypothesis)
		if premise == "" || hypothesis == "" {
			continue
		}
		chunks := j.Chunks(premise, hypothesis)
		if len(chunks) > 1 {
			j.chunked.Add(1)
		}
		for _, c := range chunks {
			j.pairs.Add(1)
			key := j.key(c, hypothesis)
			if p, ok := j.cached(key); ok {
				j.hits.Add(1)
				out[i] = math.Max(out[i], p)
				continue
			}
			if k, ok := queued[key]; ok {
				// The same pair twice in one call: computed once, counted as a cache hit as a
				// second call would be.
				j.hits.Add(1)
				need = append(need, chunkOf{i, k})
				continue
			}
			ids, types := encoder.Pair(j.tok, j.sp, c, hypothesis, j.maxLen)
			queued[key] = len(todo)
			need = append(need, chunkOf{i, len(todo)})
			todo = append(todo, &request{key: key, premise: c, hyp: hypothesis, ids: ids, types: types, finished: make(chan struct{})})
		}
	}
	if len(todo) == 0 {
		return out, nil
	}
	// Longest first; ties by key, so that the passes do not depend on the order of the pairs.
	sorted := slices.Clone(todo)
	slices.SortStableFunc(sorted, func(a, b *request) int {
		if d := len(b.ids) - len(a.ids); d != 0 {
			return d
		}
		return strings.Compare(a.key, b.key)
	})
	if err := j.compute(ctx, sorted); err != nil {
		return nil, err
	}
	for _, n := range need {
		out[n.pair] = math.Max(out[n.pair], todo[n.req].p)
	}
	return out, nil
}

// Chunks cuts premise into chunks of whole sentences (dataset.SplitSentences), each the longest
// run of consecutive sentences whose pair with hypothesis fits in MaxLength tokens; a sentence
// that does not fit alone is a chunk of its own (Pair truncates it). A premise that fits is one
// chunk, as it is.
func (j *Judge) Chunks(premise, hypothesis string) []string {
	nh := len(j.tok.Encode(hypothesis, false))
	fits := func(text string) bool {
		return len(j.tok.Encode(text, false))+nh+j.sp.Overhead() <= j.maxLen
	}
	if fits(premise) {
		return []string{premise}
	}
	var out []string
	cur := ""
	for _, s := range dataset.SplitSentences(premise) {
		if cur == "" {
			cur = s
			continue
		}
		if next := cur + " " + s; fits(next) {
			cur = next
			continue
		}
		out = append(out, cur)
		cur = s
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// key is the cache key of a pair under this judge (entryKey).
func (j *Judge) key(premise, hypothesis string) string {
	return entryKey(j.ident, premise, hypothesis)
}

// entryKey is the cache key of a pair: the model's identity (ModelSHA256) and the texts.
func entryKey(ident, premise, hypothesis string) string {
	h := sha256.New()
	fmt.Fprintf(h, "tracksum-nli v2\x00%s\x00", ident)
	h.Write([]byte(premise))
	h.Write([]byte{0})
	h.Write([]byte(hypothesis))
	return hex.EncodeToString(h.Sum(nil))
}

// maxEntryBytes bounds a cache entry: a larger one is neither written nor read (a premise chunk
// holds at most MaxLength tokens, a few KB, unless it is one enormous sentence, which is then
// recomputed each run rather than read from a file of any size).
const maxEntryBytes = 1 << 20

// cacheEntry is one cached probability; the texts are kept so that a file can be read by a
// person, and so that an entry can be checked against its key.
type cacheEntry struct {
	Model      string  `json:"model_sha256"`
	Premise    string  `json:"premise"`
	Hypothesis string  `json:"hypothesis"`
	Entailment float64 `json:"entailment"`
}

// encodeEntry is the bytes of an entry as the judge writes them.
func encodeEntry(ident, premise, hypothesis string, p float64) ([]byte, error) {
	return json.Marshal(cacheEntry{Model: ident, Premise: premise, Hypothesis: hypothesis, Entailment: p})
}

// readEntry returns the probability held by data, an entry read from the file of key under the
// model ident, when data is exactly what encodeEntry writes for that key: the same fields in the
// same order, none missing, added or repeated (an entry without "entailment" is not a
// probability of 0), the model identity, the texts whose key it is, a probability in [0, 1], and
// no more than maxEntryBytes. Anything else is a miss.
func readEntry(data []byte, key, ident string) (float64, bool) {
	if len(data) > maxEntryBytes {
		return 0, false
	}
	var e cacheEntry
	if json.Unmarshal(data, &e) != nil || e.Model != ident || !(e.Entailment >= 0 && e.Entailment <= 1) ||
		entryKey(ident, e.Premise, e.Hypothesis) != key {
		return 0, false
	}
	if want, err := encodeEntry(ident, e.Premise, e.Hypothesis, e.Entailment); err != nil || !bytes.Equal(want, data) {
		return 0, false
	}
	return e.Entailment, true
}

func (j *Judge) cachePath(key string) string {
	return filepath.Join(j.opts.CacheDir, key[:2], key+".json")
}

// cached returns the probability of key from memory or the disk cache.
func (j *Judge) cached(key string) (float64, bool) {
	j.mu.Lock()
	p, ok := j.memo[key]
	j.mu.Unlock()
	if ok || j.opts.CacheDir == "" || j.cacheOff.Load() {
		return p, ok
	}
	// A missing, damaged, foreign or oversized entry is a miss: the pair is scored again and the
	// entry rewritten. ReadFileMax stops at the bound, so a huge file is never read whole.
	data, err := atomicio.ReadFileMax(j.cachePath(key), maxEntryBytes)
	if err != nil {
		return 0, false
	}
	p, ok = readEntry(data, key, j.ident)
	if !ok {
		return 0, false
	}
	j.mu.Lock()
	j.memo[key] = p
	j.mu.Unlock()
	return p, true
}

// compute queues reqs and runs forward passes until each of them is done: up to passes() passes at
// once, each taking the next BatchSize pending pairs, its own caller's or another's. A pass of a
// tiny encoder keeps about 1.2 of 2 cores busy on the pure-Go backend (its small products are not
// split across cores), so two passes side by side use the machine; which rows go together does
// not change (the queue is cut in order), so neither do the probabilities.
func (j *Judge) compute(ctx context.Context, reqs []*request) error {
	j.mu.Lock()
	j.queue = append(j.queue, reqs...)
	j.mu.Unlock()
	var wg sync.WaitGroup
	for range cap(j.running) {
		wg.Go(func() { j.drain(ctx) })
	}
	wg.Wait()
	for _, r := range reqs {
		select {
		case <-r.finished:
		case <-ctx.Done():
			return ctx.Err()
		}
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// drain runs forward passes over the queue until it is empty or ctx is cancelled.
func (j *Judge) drain(ctx context.Context) {
	for ctx.Err() == nil {
		j.running <- struct{}{}
		j.mu.Lock()
		n := min(len(j.queue), j.opts.BatchSize)
		batch := j.queue[:n:n]
		j.queue = j.queue[n:]
		j.mu.Unlock()
		if n > 0 {
			j.runBatch(batch)
		}
		<-j.running
		if n == 0 {
			return
		}
	}
}

// passes is how many forward passes run at once: one per CPU, at most 2 (more only splits the
// same cores among more copies of the activations).
func passes() int { return max(1, min(runtime.GOMAXPROCS(0), 2)) }

// runBatch computes the probabilities of batch in one forward pass, stores them and marks the
// requests done. The pass is right-padded to a few shapes, so that few graphs are built: rows are
// BatchSize, or the least power of two that holds a smaller batch (the last pass of a call, a
// lone caller's pair); tokens a multiple of 32 (a power of two on a backend that compiles a
// program per shape, model.CompilesPerShape), at most MaxLength. On 60 dev instances (2 busy
// cores, a tiny BERT), shapes that followed each batch's exact size and length (multiples of 16)
// took 64 s, shapes of BatchSize rows and multiples of 64 tokens 34 s; the batches were then the
// 1-2 pairs queued by concurrent one-pair calls. Since the passes hold pairs sorted by length,
// multiples of 32 rather than 64 tokens pad less: 17 graphs instead of 10 over the 544 dev
// instances, and tiny DeBERTa's run 62-66 s instead of 68-72 (docs/eval.md).
// Token types are the pair's (BERT's 0 for the premise, 1 for the hypothesis; all 0 for RoBERTa).
func (j *Judge) runBatch(batch []*request) {
	longest := 0
	for _, r := range batch {
		longest = max(longest, len(r.ids))
	}
	t, b := min((longest+31)/32*32, j.maxLen), min(pow2(len(batch)), max(j.opts.BatchSize, len(batch)))
	if model.CompilesPerShape() {
		t = min(pow2(longest), j.maxLen)
	}
	j.mu.Lock()
	if shape := [2]int{b, t}; !j.shapes[shape] {
		j.shapes[shape] = true
		j.graphs.Add(1)
	}
	j.mu.Unlock()
	ids := make([]int32, b*t)
	types := make([]int32, b*t)
	mask := make([]int32, b*t)
	for i := range ids {
		ids[i] = j.pad
	}
	for i, r := range batch {
		copy(ids[i*t:], r.ids)
		copy(types[i*t:], r.types)
		for k := range r.ids {
			mask[i*t+k] = 1
		}
	}
	var err error
	var logits []float32
	// GoMLX's Exec compiles and runs graphs concurrently (each call gets its own buffers).
	res, e := j.exec.Exec(tensors.FromFlatDataAndDimensions(ids, b, t), tensors.FromFlatDataAndDimensions(types, b, t),
		tensors.FromFlatDataAndDimensions(mask, b, t))
	if e != nil {
		err = fmt.Errorf("nli judge: %w", e)
	} else {
		logits = tensors.MustCopyFlatData[float32](res[0])
	}
	j.batches.Add(1)
	j.rows.Add(int64(b))
	j.tokens.Add(int64(b * t))
	for i, r := range batch {
		if err != nil {
			r.err = err
		} else {
			r.p = softmaxAt(logits[i*j.labels:(i+1)*j.labels], j.entail)
			j.computed.Add(1)
			j.store(r, r.p)
		}
		close(r.finished)
	}
}

// store keeps p in memory and in the disk cache. An entry over maxEntryBytes is not written (it
// is recomputed next time); a failed write (the directory removed, the disk full) turns the disk
// cache off, said once.
func (j *Judge) store(r *request, p float64) {
	j.mu.Lock()
	j.memo[r.key] = p
	j.mu.Unlock()
	if j.opts.CacheDir == "" || j.cacheOff.Load() {
		return
	}
	data, err := encodeEntry(j.ident, r.premise, r.hyp, p)
	if err != nil || len(data) > maxEntryBytes {
		return
	}
	if err := atomicio.WriteFile(j.cachePath(r.key), data, 0o644); err != nil {
		j.turnCacheOff(err)
	}
}

// softmaxAt is softmax(logits)[i] in float64.
func softmaxAt(logits []float32, i int) float64 {
	m := math.Inf(-1)
	for _, v := range logits {
		m = math.Max(m, float64(v))
	}
	sum := 0.0
	for _, v := range logits {
		sum += math.Exp(float64(v) - m)
	}
	return math.Exp(float64(logits[i])-m) / sum
}

// pow2 is the least power of two >= n (n >= 1).
func pow2(n int) int {
	p := 1
	for p < max(n, 1) {
		p *= 2
	}
	return p
}

// Package pretrainedtest writes a tiny random causal LM snapshot (hf/randsnap), prepares a small
// sample on which to fine-tune it (dataset/prepare/preparetest's), and fine-tunes a tiny LoRA
// summarizer, once per test binary, for the tests of model/pretrained and of what serves or runs
// its checkpoints (serve). The models are barely trained: the tests check the plumbing, not the
// text.
//
// # Example
//
//	func TestMain(m *testing.M) { os.Exit(pretrainedtest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		cfg, data, llm := pretrainedtest.Setup(t)
//		ck := pretrainedtest.Summarizer(t) // a LoRA summarizer checkpoint on llm
//	}
package pretrainedtest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/hf/randsnap"
	"github.com/tracksum/tracksum/model/pretrained"
)

var fixture struct {
	once sync.Once
	dir  string
	llm  string
	// byteTokenizer: the real Llama tokenizer is absent (as in CI: its files are fetched, not
	// committed), so the snapshot has randsnap's one-token-per-byte tokenizer, whose prompts need
	// longer max_seq_len.
	byteTokenizer bool
	// nf4 is llm in bitsandbytes' 4-bit layout (randsnap --quantize nf4).
	nf4 string
	err error
}

var summ struct {
	once sync.Once
	dir  string
	err  error
}

// repoRoot is the repository's root directory (where configs/ lives).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// LlamaTokenizer is the directory of the real Llama 3.1 tokenizer files, when fetched
// (tools/hftokenizer/fetch.sh).
func LlamaTokenizer() string {
	return filepath.Join(repoRoot(), "hf", "tokenizer", "testdata", "hf", "llama3")
}

// Main runs the tests (through preparetest.Main, which removes the prepared sample) and then
// removes the files written for them; call it from TestMain.
func Main(m *testing.M) int {
	code := preparetest.Main(m)
	Cleanup()
	return code
}

// Cleanup removes the files written for the tests: for a TestMain that runs the tests otherwise
// (e.g. through servetest.Main, which also runs preparetest.Main).
func Cleanup() {
	if fixture.dir != "" {
		os.RemoveAll(fixture.dir)
	}
}

// Log is where the fine-tuning runs write: stderr with -v, else nowhere.
func Log() io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}

// Setup returns configs/tiny.yaml with a sample of 10 abstracts, the directory that sample is
// prepared in and a random Llama snapshot (vocab 300, hidden 16, one layer; the real Llama 3.1
// tokenizer when fetched, else randsnap's byte-level one, with the max_seq_len its longer prompts
// need). The data (preparetest's: read-only) and the snapshot are written once per test binary.
func Setup(t testing.TB) (cfg *config.Config, data, llm string) {
	t.Helper()
	cfg, err := config.Load(viper.New(), filepath.Join(repoRoot(), "configs", "tiny.yaml"), pflag.NewFlagSet("t", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prepare.SampleSize = 10
	data = preparetest.Dir(t, cfg)
	fixture.once.Do(func() {
		if fixture.dir, fixture.err = os.MkdirTemp("", "pretrained-e2e-"); fixture.err != nil {
			return
		}
		snap := randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 32, Seed: 7}
		if _, err := os.Stat(filepath.Join(LlamaTokenizer(), "tokenizer.json")); err == nil {
			snap.Vocab, snap.TokenizerDir = 128256, LlamaTokenizer()
			snap.Extra = map[string]any{"bos_token_id": 128000, "eos_token_id": []int{128001, 128008, 128009}}
		} else {
			fixture.byteTokenizer = true
		}
		fixture.llm = filepath.Join(fixture.dir, "llm")
		if fixture.err = randsnap.WriteDecoder(fixture.llm, snap); fixture.err != nil {
			return
		}
		snap.Quantize = "nf4"
		fixture.nf4 = filepath.Join(fixture.dir, "llm-nf4")
		fixture.err = randsnap.WriteDecoder(fixture.nf4, snap)
	})
	if fixture.err != nil {
		t.Fatal(fixture.err)
	}
	if fixture.byteTokenizer {
		t.Logf("%s is absent (fetch it with tools/hftokenizer/fetch.sh): using randsnap's byte-level tokenizer", LlamaTokenizer())
		cfg.Tracker.MaxSeqLen, cfg.Summarizer.MaxSeqLen = 512, 1024
	}
	return cfg, data, fixture.llm
}

// NF4Snapshot returns Setup's snapshot written in bitsandbytes' 4-bit layout (randsnap
// --quantize nf4: its projections as NF4 codes, as unsloth's -bnb-4bit snapshots), for QLoRA runs.
func NF4Snapshot(t testing.TB) string {
	t.Helper()
	Setup(t)
	return fixture.nf4
}

// ByteTokenizer reports whether Setup's snapshot has randsnap's byte-level tokenizer (the real
// Llama one is absent).
func ByteTokenizer() bool { return fixture.byteTokenizer }

// Loop makes a training loop of 3 steps of 4 examples, evaluated once at the end.
func Loop(l *config.TrainLoop) {
	l.MaxSteps, l.BatchSize, l.EvalEvery, l.WarmupSteps, l.LearningRate, l.GradAccumulation = 3, 4, 3, 0, 1e-2, 1
}

// SummarizerConfig sets cfg (from Setup) to fine-tune a LoRA summarizer on llm: rank 4 on q, v
// and down projections, summaries of at most 6 tokens, beam 2, Loop.
func SummarizerConfig(cfg *config.Config, llm string) {
	cfg.Summarizer.Pretrained = llm
	cfg.Summarizer.LoRA.Rank, cfg.Summarizer.LoRA.Alpha = 4, 8
	cfg.Summarizer.LoRA.TargetModules = []string{"q_proj", "v_proj", "down_proj"}
	if !fixture.byteTokenizer {
		cfg.Summarizer.MaxSeqLen = 512
	}
	cfg.Summarizer.MaxSummaryLen, cfg.Summarizer.MaxNewTokens = 6, 8
	cfg.Summarizer.BeamSize = 2
	Loop(&cfg.Summarizer.Train)
}

// Summarizer returns a LoRA summarizer checkpoint fine-tuned on Setup's snapshot with
// SummarizerConfig, trained once per test binary (a few seconds). Its directory is shared: tests
// must not write into it.
func Summarizer(t testing.TB) string {
	t.Helper()
	cfg, data, llm := Setup(t)
	summ.once.Do(func() {
		SummarizerConfig(cfg, llm)
		summ.dir = filepath.Join(fixture.dir, "summarizer")
		summ.err = pretrained.TrainSummarizer(context.Background(), cfg, data, summ.dir, pretrained.TrainOptions{Log: Log()})
	})
	if summ.err != nil {
		t.Fatalf("fine-tuning the tiny summarizer: %v", summ.err)
	}
	return summ.dir
}

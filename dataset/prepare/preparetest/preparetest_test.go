package preparetest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// small is the default config with a sample small enough to prepare in a fraction of a second.
func small() *config.Config {
	c := config.Default()
	c.Prepare.SampleSize = 12
	c.Tokenizer.VocabSize = 400
	return &c
}

// fatalTB records the message of a Fatal and stops the calling goroutine as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf calls Dir with cfg and returns the message it stopped with ("" if it returned).
func fatalOf(t *testing.T, cfg *config.Config) string {
	return fatalOfCall(t, func(tb testing.TB) { Dir(tb, cfg) })
}

// fatalOfCall runs call on a fatalTB and returns the message it stopped with.
func fatalOfCall(t *testing.T, call func(testing.TB)) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		call(f)
	}()
	<-done
	return f.msg
}

func TestDir(t *testing.T) {
	base := Dir(t, small())
	for _, tc := range []struct {
		desc   string
		change func(*config.Config)
		same   bool   // the same directory as base's
		fatal  string // the start of the t.Fatal message; "" when Dir returns
		detail string // a part of the message
	}{
		{desc: "same settings", change: func(*config.Config) {}, same: true},
		{desc: "another section changed", change: func(c *config.Config) {
			c.Tracker.Threshold, c.Summarizer.Train.MaxSteps = 0.3, 7
		}, same: true},
		{desc: "sample size", change: func(c *config.Config) { c.Prepare.SampleSize = 13 }},
		{desc: "folds", change: func(c *config.Config) { c.Prepare.Folds = 3 }},
		{desc: "seed", change: func(c *config.Config) { c.Seed++ }},
		{desc: "tokenizer", change: func(c *config.Config) { c.Tokenizer.VocabSize = 450 }},
		{desc: "bad setting", change: func(c *config.Config) { c.Prepare.SampleSize = 0 },
			fatal:  "preparetest: preparing the built-in sample (prepare.sample_size 0) with seed 3407",
			detail: "prepare.sample_size: must be > 0, got 0"},
		{desc: "failed preparation", change: func(c *config.Config) { c.Prepare.Folds = 50 },
			fatal:  "preparetest: preparing the built-in sample (prepare.sample_size 12) with seed 3407, prepare.folds 50",
			detail: "prepare: folds: 50 folds need at least 50 abstracts, got 12"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := small()
			tc.change(cfg)
			if tc.fatal != "" {
				msg := fatalOf(t, cfg)
				if !strings.HasPrefix(msg, tc.fatal) || !strings.Contains(msg, tc.detail) {
					t.Errorf("Fatal message %q, want %q ... %q", msg, tc.fatal, tc.detail)
				}
				// The failure is cached: the same settings fail again with the same message.
				if again := fatalOf(t, cfg); again != msg {
					t.Errorf("second call: %q, want %q", again, msg)
				}
				return
			}
			dir := Dir(t, cfg)
			if (dir == base) != tc.same {
				t.Errorf("directory %s, base %s: want same = %v", dir, base, tc.same)
			}
			m, err := dataset.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.Source != "sample" || m.SampleSize != cfg.Prepare.SampleSize || m.Seed != cfg.Seed || m.Tokenizer.VocabSize > cfg.Tokenizer.VocabSize {
				t.Errorf("manifest: source %s, sample size %d, seed %d, vocab %d: not prepared with %+v",
					m.Source, m.SampleSize, m.Seed, m.Tokenizer.VocabSize, cfg.Prepare)
			}
			// The other sections are the defaults whoever asked first.
			if got, err := config.ReadFile(filepath.Join(dir, dataset.ConfigFile)); err != nil || got.Tracker.Threshold != config.DefaultTracker().Threshold {
				t.Errorf("config.yaml: %v, tracker threshold %v", err, got.Tracker.Threshold)
			}
		})
	}
}

// TestDirParallel: concurrent callers of one new setting get one directory, prepared once.
func TestDirParallel(t *testing.T) {
	cfg := small()
	cfg.Prepare.SampleSize = 11
	state.mu.Lock()
	before := state.runs
	state.mu.Unlock()
	dirs := make([]string, 4)
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Go(func() { dirs[i] = Dir(t, cfg) })
	}
	wg.Wait()
	for _, d := range dirs[1:] {
		if d != dirs[0] {
			t.Errorf("directories %v, want one", dirs)
		}
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if n := state.runs - before; n != 1 {
		t.Errorf("prepared %d times, want once", n)
	}
}

// TestUnchanged: a file added, changed or removed in a shared directory is reported by name,
// once.
func TestUnchanged(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.json", "{}")
	write("b.json", "[]")
	files, err := fingerprints(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := &entry{dir: dir, files: files}
	if err := unchanged(e); err != nil {
		t.Fatalf("untouched directory: %v", err)
	}
	write("a.json", "{ }")
	write("c.json", "")
	if err := os.Remove(filepath.Join(dir, "b.json")); err != nil {
		t.Fatal(err)
	}
	want := "a.json changed, b.json removed, c.json added"
	if err := unchanged(e); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
	if err := unchanged(e); err != nil {
		t.Errorf("reported twice: %v", err)
	}
}

// TestDirWithoutMain: outside Main (nothing would remove the directories) Dir refuses, saying why.
func TestDirWithoutMain(t *testing.T) {
	state.mu.Lock()
	state.running = false
	state.mu.Unlock()
	defer func() {
		state.mu.Lock()
		state.running = true
		state.mu.Unlock()
	}()
	want := "preparetest: the test binary does not run its tests through preparetest.Main"
	if msg := fatalOf(t, small()); !strings.HasPrefix(msg, want) {
		t.Errorf("Fatal message %q, want %q...", msg, want)
	}
}

// TestDirFrom: input files are part of the settings, by absolute path and state.
func TestDirFrom(t *testing.T) {
	cfg := small()
	cfg.Prepare.SplitBy = dataset.SplitByInstance
	cfg.Prepare.TrainRatio, cfg.Prepare.DevRatio, cfg.Prepare.TestRatio = 0.5, 0, 0.5
	rel := filepath.Join("..", "..", "testdata", "valid.jsonl")
	abs, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(rel)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "valid.jsonl")
	if err := os.WriteFile(other, b, 0o644); err != nil {
		t.Fatal(err)
	}
	base := DirFrom(t, cfg, []string{rel})
	m, err := dataset.ReadManifest(base)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != "input" || len(m.Inputs) != 1 || m.Inputs[0].Instances != 6 {
		t.Errorf("manifest: source %s, inputs %+v: not prepared from %s", m.Source, m.Inputs, rel)
	}
	for _, tc := range []struct {
		desc   string
		inputs []string
		same   bool
	}{
		{"absolute path", []string{abs}, true},
		{"another file", []string{other}, false},
		{"the sample", nil, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if dir := DirFrom(t, cfg, tc.inputs); (dir == base) != tc.same {
				t.Errorf("directory %s, base %s: want same = %v", dir, base, tc.same)
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "missing.jsonl")
	msg := fatalOfCall(t, func(tb testing.TB) { DirFrom(tb, cfg, []string{missing}) })
	if want := "preparetest: input stat " + missing; !strings.HasPrefix(msg, want) {
		t.Errorf("Fatal message %q, want %q...", msg, want)
	}
}

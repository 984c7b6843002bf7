// Package preparetest is the one test fixture of prepared data: it prepares the built-in
// synthetic sample (or given input files) once per test binary per distinct prepare setting, so
// that the tests of the packages that train, infer or cross-validate on a prepared directory share
// it instead of preparing their own.
//
// The directories live under one temporary directory of the test binary, removed by Main when the
// tests end; Dir refuses to run without Main, so that nothing is left in the temporary directory.
// A prepared directory is shared by every test of the binary that asks for the same settings:
// tests must treat it as read-only (a test that needs to change prepared files copies them). Each
// test's cleanup, and Main at the end, check that no file of a shared directory was added, removed
// or changed, and fail naming the file.
//
// # Example
//
//	func TestMain(m *testing.M) { os.Exit(preparetest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		cfg := ... // e.g. configs/tiny.yaml with prepare.sample_size 40
//		data := preparetest.Dir(t, cfg) // read-only
//	}
package preparetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset/prepare"
)

// state is the binary's cache: one entry per distinct settings digest.
var state struct {
	mu      sync.Mutex
	running bool   // Main is running the tests
	root    string // the binary's temporary directory, made on first use
	entries map[string]*entry
	runs    int // prepare.Run calls, for the package's own test
}

// entry is one prepared directory, made once by the first caller of its settings.
type entry struct {
	once sync.Once
	dir  string
	err  error

	mu sync.Mutex
	// files maps each relative path to its fingerprint, as prepared or as last reported changed
	// (so that one writer fails one test, not every later one).
	files map[string]string
}

// Main runs the tests, checks that none changed a shared prepared directory, and removes the
// directories; call it from TestMain (directly, or through a fixture's Main that calls it, such as
// servetest.Main and pretrainedtest.Main). It returns the exit code, non-zero when a test failed or
// a shared directory was changed.
func Main(m *testing.M) int {
	state.mu.Lock()
	state.running = true
	state.mu.Unlock()
	code := m.Run()
	state.mu.Lock()
	defer state.mu.Unlock()
	state.running = false
	for _, e := range state.entries {
		if e.err != nil || e.files == nil {
			continue
		}
		if err := unchanged(e); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	if state.root != "" {
		if err := os.RemoveAll(state.root); err != nil {
			fmt.Fprintf(os.Stderr, "preparetest: removing the prepared directories: %v\n", err)
		}
	}
	state.root, state.entries = "", nil
	return code
}

// settings is everything prepare.Run reads from its config and options: two calls with the same
// settings prepare the same directory (prepare is deterministic), so they share one.
type settings struct {
	Seed      int64            `json:"seed"`
	Prepare   config.Prepare   `json:"prepare"`
	Tokenizer config.Tokenizer `json:"tokenizer"`
	Inputs    []input          `json:"inputs,omitempty"`
}

// input identifies an input file by its path and its state, so that an edited file between two
// runs of a benchmark is not mistaken for the one already prepared.
type input struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mod_time"`
}

// Dir returns a directory holding the built-in synthetic sample prepared with cfg's prepare
// settings (seed, prepare.*, tokenizer.*; the other sections do not matter), prepared once per test
// binary per distinct settings and shared by every test that asks for them: treat it as read-only.
// Bad settings, or a failed preparation, are a t.Fatal with the message. The calling package's
// TestMain must run the tests through Main.
func Dir(t testing.TB, cfg *config.Config) string {
	t.Helper()
	return DirFrom(t, cfg, nil)
}

// DirFrom is Dir for the given input files instead of the built-in sample (the inputs of
// tracksum-prepare --input).
func DirFrom(t testing.TB, cfg *config.Config, inputs []string) string {
	t.Helper()
	s := settings{Seed: cfg.Seed, Prepare: cfg.Prepare, Tokenizer: cfg.Tokenizer}
	for _, in := range inputs {
		abs, err := filepath.Abs(in)
		if err != nil {
			t.Fatalf("preparetest: input %s: %v", in, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			t.Fatalf("preparetest: input %v", err)
		}
		s.Inputs = append(s.Inputs, input{Path: abs, Size: st.Size(), ModTime: st.ModTime().UnixNano()})
	}
	key, err := s.digest()
	if err != nil {
		t.Fatalf("preparetest: %v", err)
	}
	e, root, err := lookup(key)
	if err != nil {
		t.Fatal(err)
	}
	e.once.Do(func() {
		e.dir = filepath.Join(root, key)
		e.err = s.prepare(e.dir)
		if e.err == nil {
			e.files, e.err = fingerprints(e.dir)
		}
	})
	if e.err != nil {
		t.Fatalf("preparetest: preparing %s: %v", s.describe(), e.err)
	}
	t.Cleanup(func() {
		if err := unchanged(e); err != nil {
			t.Error(err)
		}
	})
	return e.dir
}

// lookup returns the entry of key (new if none) and the binary's temporary directory, made on
// first use.
func lookup(key string) (*entry, string, error) {
	state.mu.Lock()
	defer state.mu.Unlock()
	if !state.running {
		return nil, "", errors.New("preparetest: the test binary does not run its tests through preparetest.Main " +
			"(add func TestMain(m *testing.M) { os.Exit(preparetest.Main(m)) }): the prepared directories would be left behind")
	}
	if state.root == "" {
		root, err := os.MkdirTemp("", "tracksum-preparetest-")
		if err != nil {
			return nil, "", fmt.Errorf("preparetest: %w", err)
		}
		state.root, state.entries = root, map[string]*entry{}
	}
	e := state.entries[key]
	if e == nil {
		e = &entry{}
		state.entries[key] = e
	}
	return e, state.root, nil
}

// digest names the settings: the hex SHA-256 prefix of their JSON.
func (s settings) digest() (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// describe is the settings in a failure message.
func (s settings) describe() string {
	what := fmt.Sprintf("the built-in sample (prepare.sample_size %d)", s.Prepare.SampleSize)
	if len(s.Inputs) > 0 {
		paths := make([]string, len(s.Inputs))
		for i, in := range s.Inputs {
			paths[i] = in.Path
		}
		what = strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s with seed %d, prepare.folds %d, tokenizer %s/%d", what, s.Seed, s.Prepare.Folds, s.Tokenizer.Kind, s.Tokenizer.VocabSize)
}

// prepare writes out from the settings alone: the other sections are the defaults, so that the
// config.yaml and manifest of a shared directory do not depend on which test asked first.
func (s settings) prepare(out string) error {
	if err := errors.Join(s.Prepare.Validate(), s.Tokenizer.Validate()); err != nil {
		return err
	}
	cfg := config.Default()
	cfg.Seed, cfg.Prepare, cfg.Tokenizer = s.Seed, s.Prepare, s.Tokenizer
	var inputs []string
	for _, in := range s.Inputs {
		inputs = append(inputs, in.Path)
	}
	state.mu.Lock()
	state.runs++
	state.mu.Unlock()
	_, err := prepare.Run(context.Background(), &cfg, prepare.Options{Inputs: inputs, Out: out})
	return err
}

// fingerprints maps each file under dir (relative, slash-separated) to its mode, size and SHA-256:
// the prepared directories are small, and a content hash also catches a rewrite of equal size.
func fingerprints(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fp := info.Mode().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			fp += " " + hex.EncodeToString(sum[:])
		}
		out[filepath.ToSlash(rel)] = fp
		return nil
	})
	return out, err
}

// unchanged reports the files of e's directory that were added, removed or changed since it was
// prepared, or since the last report.
func unchanged(e *entry) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	now, err := fingerprints(e.dir)
	if err != nil {
		return fmt.Errorf("preparetest: the shared prepared directory %s: %w", e.dir, err)
	}
	var diffs []string
	for p, fp := range e.files {
		switch got, ok := now[p]; {
		case !ok:
			diffs = append(diffs, p+" removed")
		case got != fp:
			diffs = append(diffs, p+" changed")
		}
	}
	for p := range now {
		if _, ok := e.files[p]; !ok {
			diffs = append(diffs, p+" added")
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	e.files = now
	slices.Sort(diffs)
	return fmt.Errorf("preparetest: a test wrote into the shared, read-only prepared directory %s: %s (copy it, or prepare its own)",
		e.dir, strings.Join(diffs, ", "))
}

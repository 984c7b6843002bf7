package infer

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
)

// copyInput copies testdata/instances.jsonl into a temporary directory and returns its path and
// content.
func copyInput(t *testing.T) (string, []byte) {
	t.Helper()
	b, err := os.ReadFile("testdata/instances.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "x.jsonl")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b
}

// TestOutputIsInput is the regression test of issue 10 item 3: `--input x.jsonl --out x.jsonl`
// overwrote the input and `--refs` equal to `--out` clobbered it too. Every such run is refused
// before any work, and the input is left byte for byte.
func TestOutputIsInput(t *testing.T) {
	in, content := copyInput(t)
	dir := filepath.Dir(in)
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "p.jsonl")
	for _, tc := range []struct {
		desc      string
		out, refs string
		want      string
	}{
		{"out is the input", in, "", "--out " + in + " is the same file as --input"},
		{"out is a symlink to the input", link, "", "is the same file as --input"},
		{"refs is the input", other, in, "--refs " + in + " is the same file as --input"},
		{"refs equals out", other, other, "--out and --refs are the same file"},
		{"out through another spelling", filepath.Join(dir, "sub", "..", "x.jsonl"), "", "is the same file as --input"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := config.Default()
			_, err := Run(context.Background(), &cfg, Options{Tracker: GoldTracker, Summarizer: ExtractiveSummarizer,
				Input: link, Out: tc.out, Refs: tc.refs, Log: discard{}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant one containing %q", err, tc.want)
			}
			if b, _ := os.ReadFile(in); string(b) != string(content) {
				t.Fatal("the input was modified")
			}
			if _, err := os.Stat(other); err == nil {
				t.Fatal("an output was written")
			}
		})
	}
}

// TestAspectsCaseAndNames is the regression test of issue 10 item 9 (second half): `--aspects A`
// or `aims` on JSONL input gave 0 predictions with exit 0. Codes and names are accepted in any
// case and normalised to the registry's codes; unknown ones are refused up front, on JSONL and raw
// text alike.
func TestAspectsCaseAndNames(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		input   string
		aspects []string
		want    int    // predictions
		wantErr string // "" = success
	}{
		{desc: "upper-case code", input: "testdata/instances.jsonl", aspects: []string{"I"}, want: 1},
		{desc: "full name, any case", input: "testdata/instances.jsonl", aspects: []string{"INTERVENTION", "participants"}, want: 2},
		{desc: "name with a space", input: "testdata/instances.jsonl", aspects: []string{"side effects"}, want: 1},
		{desc: "repeats collapse", input: "testdata/instances.jsonl", aspects: []string{"i", "I", "Intervention"}, want: 1},
		{desc: "unknown aspect on JSONL", input: "testdata/instances.jsonl", aspects: []string{"zz"}, wantErr: `unknown aspect "zz" for the tracsum aspect set`},
		{desc: "known aspect absent from the input", input: "testdata/instances.jsonl", aspects: []string{"aims"}, wantErr: "no instance of the aspects a"},
		{desc: "unknown aspect on raw text", input: "testdata/abstracts.txt", aspects: []string{"OB"}, wantErr: `unknown aspect "OB"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := config.Default()
			cfg.Infer.Aspects = tc.aspects
			st, err := Run(context.Background(), &cfg, Options{Tracker: GoldTracker, Summarizer: ExtractiveSummarizer,
				Input: tc.input, Out: filepath.Join(t.TempDir(), "p.jsonl"), Log: discard{}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v\nwant one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Predictions != tc.want {
				t.Errorf("%d predictions, want %d", st.Predictions, tc.want)
			}
		})
	}
	// Raw text: the normalised codes reach the tracker (the gold tracker cannot run on raw text,
	// so ReadInput is checked directly).
	abs, _, err := ReadInput("testdata/abstracts.txt", "", "tracsum", []string{"Aims", "O"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(abs[0].Aspects, ","); got != "a,o" {
		t.Errorf("raw text aspects %q, want a,o", got)
	}
}

// TestNaNScoresFailEarly is the regression test of issue 10 item 14 (NaN model): a tracker that
// returns NaN failed only when the predictions were written, after the whole run. The bad score
// is now an error naming the abstract and the aspect as soon as it is produced.
func TestNaNScoresFailEarly(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		desc   string
		scores []float32
		want   string
	}{
		{"NaN", []float32{0.1, nan, 0.5}, "abstract 7, aspect i: tracker score is not a probability: sentence 1 scored NaN"},
		{"+Inf", []float32{float32(math.Inf(1)), 0, 0}, "sentence 0 scored +Inf"},
		{"above 1", []float32{0, 0, 1.5}, "sentence 2 scored 1.5"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := &Pipeline{Tracker: fakeTracker{scores: map[string][]float32{"i": tc.scores}}, Threshold: 0.5}
			_, err := p.Process(Abstract{PMID: "7", Document: []string{"a", "b", "c"}, Aspects: []string{"i"}})
			if !errors.Is(err, ErrBadScore) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant ErrBadScore containing %q", err, tc.want)
			}
		})
	}
}

// TestUnwritableOutFailsFirst is the regression test of issue 10 item 14 (unwritable --out): it
// was reported after the whole inference. The error now comes before the models are loaded: with
// a tracker checkpoint that does not exist, the error is still the one about --out.
func TestUnwritableOutFailsFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc, out, want string
	}{
		{"parent is a file", filepath.Join(file, "pred.jsonl"), "pred.jsonl"},
		{"out is a directory", dir, "is a directory"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := config.Default()
			_, err := Run(context.Background(), &cfg, Options{Tracker: filepath.Join(dir, "no-such-checkpoint"),
				Input: "testdata/instances.jsonl", Out: tc.out, Log: discard{}})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "no-such-checkpoint") {
				t.Fatalf("err = %v\nwant the --out error (%q) before any model is loaded", err, tc.want)
			}
		})
	}
	// A failed run leaves no temporary file behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after failed runs, want only the file", len(entries))
	}
}

// TestEmptyInputIsAnError is the regression test of issue 10 item 14 (empty .jsonl): infer on an
// empty file exited 0 with an empty prediction file.
func TestEmptyInputIsAnError(t *testing.T) {
	in := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(in, []byte("\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "p.jsonl")
	cfg := config.Default()
	_, err := Run(context.Background(), &cfg, Options{Tracker: GoldTracker, Input: in, Out: out, Log: discard{}})
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "no instances") {
		t.Fatalf("err = %v, want ErrInput about no instances", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an empty prediction file was written")
	}
}

// TestLoadChatModelSaysWhatTheDirectoryIs is issue 35 item 11: serve --model on a prepared data
// directory or a missing path said "is a from-scratch checkpoint, not a causal LM".
func TestLoadChatModelSaysWhatTheDirectoryIs(t *testing.T) {
	root := t.TempDir()
	prepared := filepath.Join(root, "prepared")
	os.MkdirAll(prepared, 0o755)
	for _, name := range []string{"manifest.json", "splits.json"} {
		if err := os.WriteFile(filepath.Join(prepared, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	file := filepath.Join(root, "notes.txt")
	os.WriteFile(file, []byte("x"), 0o644)
	cfg := config.Default()
	for _, tc := range []struct{ desc, dir, want string }{
		{"missing path", filepath.Join(root, "nope"), " does not exist: a chat model is"},
		{"prepared data", prepared, " is a prepared data directory (tracksum-prepare's output), not a model: "},
		{"empty directory", empty, " holds no model (no checkpoint.json of a tracksum checkpoint, no config.json of a Hugging Face snapshot)"},
		{"a file", file, " is a file, not a model directory"},
	} {
		_, err := LoadChatModel(context.Background(), &cfg, tc.dir)
		if err == nil || !strings.Contains(err.Error(), tc.dir+tc.want) || strings.Contains(err.Error(), "from-scratch") {
			t.Errorf("%s: err = %v, want %q", tc.desc, err, tc.dir+tc.want)
		}
	}
}

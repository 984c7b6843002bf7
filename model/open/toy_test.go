package open_test

// The "add a backbone" recipe (docs/architecture.md), exercised: a toy backbone, unknown to
// train, infer and serve, registers its task and its opener here, trains through tracksum-train's
// command and runs through tracksum-infer's and tracksum-serve's TrackSum backend with no edit of
// any of them.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/dataset/prepare/preparetest"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/internal/cli"
	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/open"
	"github.com/tracksum/tracksum/model/role"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/training"
	"github.com/tracksum/tracksum/serve"
	"github.com/tracksum/tracksum/train"
)

// toyBackbone is the toy's backbone name in its manifests.
const toyBackbone = "toy"

// toyFile is the toy's own payload: how many leading sentences it cites.
const toyFile = "toy.json"

// toyTracker scores by a trivial rule: the first Lead sentences of an abstract are relevant to
// every aspect (0.9), the others not (0.1).
type toyTracker struct{ Lead int }

var _ role.Tracker = toyTracker{}

func (t toyTracker) ScoreBatch(reqs []tracker.Request) ([][]float32, error) {
	out := make([][]float32, len(reqs))
	for i, r := range reqs {
		out[i] = make([]float32, len(r.Doc))
		for j := range r.Doc {
			out[i][j] = 0.1
			if j < t.Lead {
				out[i][j] = 0.9
			}
		}
	}
	return out, nil
}

func init() {
	open.Register(checkpoint.KindTracker, toyBackbone, func(_ context.Context, m *checkpoint.Manifest, _ open.Options) (any, error) {
		var t toyTracker
		// The bytes Open verified, not the file again.
		b, err := m.ReadFile(toyFile)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(m.Dir, toyFile), err)
		}
		return t, nil
	})
	training.Register(training.Task{Name: "toy", Section: "tracker", Description: "toy tracker: the first k sentences (k fitted on train)",
		Train: func(ctx context.Context, _ *config.Config, r training.Request) error { return trainToy(r.Data, r.Out) }})
}

func TestMain(m *testing.M) { os.Exit(preparetest.Main(m)) }

// trainToy fits the toy on the tracker rows of the prepared train split, the lead k in 1..5 whose
// rule has the best F1 there, and seals it into out.
func trainToy(data, out string) error {
	type counts struct{ tp, fp, fn int }
	var c [6]counts
	for row, err := range dataset.ReadShards[dataset.TrackerRow](data, dataset.TaskTracker, dataset.SplitTrain) {
		if err != nil {
			return err
		}
		for k := 1; k <= 5; k++ {
			switch lead := int(row.SentenceIndex) < k; {
			case lead && row.Label:
				c[k].tp++
			case lead:
				c[k].fp++
			case row.Label:
				c[k].fn++
			}
		}
	}
	best, bestF1 := 1, -1.0
	for k := 1; k <= 5; k++ {
		if f1 := 2 * float64(c[k].tp) / float64(max(1, 2*c[k].tp+c[k].fp+c[k].fn)); f1 > bestF1 {
			best, bestF1 = k, f1
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, toyFile), fmt.Appendf(nil, `{"Lead": %d}`, best), 0o644); err != nil {
		return err
	}
	man, err := dataset.ReadManifest(data)
	if err != nil {
		return err
	}
	_, err = checkpoint.Seal(out, checkpoint.Identity{Kind: checkpoint.KindTracker, Task: dataset.TaskTracker,
		Backbone: checkpoint.Backbone{Type: toyBackbone}, Settings: checkpoint.Settings{AspectSet: man.AspectSet, Threshold: 0.5}})
	return err
}

// TestToyBackboneTrainsAndInfers trains the toy with tracksum-train's command (--task toy) on the
// built-in sample and runs tracksum-infer's command on the checkpoint: the predictions cite the
// first Lead sentences the training fitted.
func TestToyBackboneTrainsAndInfers(t *testing.T) {
	cfg := config.Default()
	data := preparetest.Dir(t, &cfg)
	out := filepath.Join(t.TempDir(), "toy")
	run := func(cmd cli.Command, args ...string) {
		t.Helper()
		if err := cmd.Flags.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Run(context.Background(), cmd.Flags.Args()); err != nil {
			t.Fatalf("%s %v: %v", cmd.Name, args, err)
		}
	}
	run(train.Command(), "--task", "toy", "--data", data, "--out", out)
	c, err := open.OpenKind(context.Background(), out, "--tracker", open.Options{}, checkpoint.KindTracker)
	if err != nil {
		t.Fatal(err)
	}
	toy, err := open.As[toyTracker](c, "--tracker", "the toy tracker")
	if err != nil {
		t.Fatal(err)
	}
	pred := filepath.Join(t.TempDir(), "pred.jsonl")
	run(infer.Command(), "--tracker", out, "--summarizer", infer.ExtractiveSummarizer, "--input", data, "--split", dataset.SplitTest,
		"--out", pred, "--grounding", "off")
	b, err := os.ReadFile(pred)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		var p dataset.Prediction
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatal(err)
		}
		if want := min(toy.Lead, len(p.Scores)); len(p.Indexes) != want || (want > 0 && p.Indexes[want-1] != want-1) {
			t.Errorf("%s/%s: cites %v, want the first %d sentences", p.PMID, p.Aspect, p.Indexes, want)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no predictions")
	}
}

// toyCheckpoint writes and seals a toy tracker citing the first lead sentences.
func toyCheckpoint(t *testing.T, lead int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, toyFile), fmt.Appendf(nil, `{"Lead": %d}`, lead), 0o644); err != nil {
		t.Fatal(err)
	}
	id := checkpoint.Identity{Kind: checkpoint.KindTracker, Task: dataset.TaskTracker, Backbone: checkpoint.Backbone{Type: toyBackbone},
		Settings: checkpoint.Settings{AspectSet: dataset.AspectSetTracSum, Threshold: 0.5}}
	m, err := checkpoint.Seal(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 1 || m.Files[0].Path != toyFile {
		t.Fatalf("the toy's manifest lists %v, want its own %s", m.Files, toyFile)
	}
	return dir
}

// TestToyBackboneThroughInferAndServe registers a toy backbone (above) and runs its checkpoint
// through infer.Run (--tracker DIR --summarizer extractive) and serve's TrackSum backend: both cite
// its rule's sentences, and a change of its payload after sealing is refused by Open.
func TestToyBackboneThroughInferAndServe(t *testing.T) {
	dir := toyCheckpoint(t, 1)
	cfg := config.Default()
	cfg.Infer.Grounding = "off"
	out := filepath.Join(t.TempDir(), "pred.jsonl")
	models := infer.Options{Tracker: dir, Summarizer: infer.ExtractiveSummarizer}
	o := models
	o.Input, o.Out, o.Log = filepath.Join("..", "..", "infer", "testdata", "instances.jsonl"), out, io.Discard
	if _, err := infer.Run(context.Background(), &cfg, o); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var preds []dataset.Prediction
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var p dataset.Prediction
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		preds = append(preds, p)
	}
	if len(preds) != 3 {
		t.Fatalf("%d predictions, want 3", len(preds))
	}
	b, err := serve.LoadTrackSumWith(context.Background(), &cfg, serve.TrackSumOptions{Models: models, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]string{"100": {"We studied drug X in adults.", "Patients received 20 mg daily for 8 weeks.", "Pain decreased by 30%."},
		"200": {"Children with asthma were enrolled.", "Inhaler use fell."}}
	for _, p := range preds {
		doc := docs[p.PMID]
		if !slices.Equal(p.Indexes, []int{0}) || p.Summary != doc[0] {
			t.Errorf("infer %s/%s: cites %v with %q, want [0] with %q", p.PMID, p.Aspect, p.Indexes, p.Summary, doc[0])
		}
		var prompt strings.Builder
		fmt.Fprintf(&prompt, "Aspect: %s\nDocument:\n", p.Aspect)
		for j, s := range doc {
			fmt.Fprintf(&prompt, "[%d] %s\n", j, s)
		}
		c, err := b.Complete(context.Background(), []serve.Message{{Role: "user", Content: prompt.String()}}, serve.Params{})
		if err != nil {
			t.Fatal(err)
		}
		if want := "Summary: " + doc[0] + "\nCitations: [0]"; c.Content != want {
			t.Errorf("serve %s/%s: %q, want %q", p.PMID, p.Aspect, c.Content, want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, toyFile), []byte(`{"Lead": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := open.Open(context.Background(), dir, open.Options{}); !errors.Is(err, checkpoint.ErrCheckpoint) || !strings.Contains(err.Error(), toyFile) {
		t.Errorf("Open of a changed toy checkpoint: %v, want the checkpoint error naming %s", err, toyFile)
	}
}

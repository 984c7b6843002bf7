package variant

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// preparedDir is a prepared directory as far as the orchestration reads it: its manifest.
func preparedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	man := dataset.Manifest{SchemaVersion: dataset.ShardSchemaVersion, AspectSet: "tracsum"}
	if err := checkpoint.WriteJSON(filepath.Join(dir, dataset.ManifestFile), man); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakePart writes the files a from-scratch model of task (a summarizer or a tracker) leaves, with
// threshold as its identity's, and returns report as its training report; fail makes it fail.
func fakePart(t *testing.T, task string, threshold float64, report string, fail error) Part[string] {
	return Part[string]{Announce: task + " part", Train: func(_ context.Context, dir string) (checkpoint.Identity, string, error) {
		if fail != nil {
			return checkpoint.Identity{}, "", fail
		}
		meta := map[string]string{"summarizer": checkpoint.SummarizerFile, "tracker": checkpoint.HyperparamsFile}[task]
		for _, f := range []string{meta, filepath.Join(checkpoint.BestDir, checkpoint.BestVariables)} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte(task), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		id := checkpoint.Identity{Backbone: checkpoint.Backbone{Type: checkpoint.BackboneScratch, Architecture: "transformer"}}
		id.Settings.Threshold = threshold
		return id, report, nil
	}}
}

// readManifest reads dir's checkpoint.json as Seal wrote it.
func readManifest(t *testing.T, dir string) checkpoint.Manifest {
	t.Helper()
	var m checkpoint.Manifest
	b, err := os.ReadFile(filepath.Join(dir, checkpoint.ManifestFile))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTrainSumThenTrack(t *testing.T) {
	data := preparedDir(t)
	for _, tc := range []struct {
		desc       string
		existing   *Meta // variant.json already in --out
		pretrained bool
		trackerErr error
		err        string // "" = trained
	}{
		{desc: "fresh"},
		{desc: "resumed", existing: &Meta{Variant: SumThenTrack, AspectSet: "tracsum"}},
		{desc: "pretrained", pretrained: true},
		{desc: "other variant", existing: &Meta{Variant: EndToEnd}, err: `sum_then_track: --out: `},
		{desc: "other backbone", existing: &Meta{Variant: SumThenTrack, Pretrained: true}, err: "of a fine-tuned pretrained LM"},
		{desc: "tracker fails", trackerErr: errors.New("tracker broke"), err: "tracker broke"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "stt")
			if tc.existing != nil {
				if err := os.MkdirAll(out, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := Write(out, *tc.existing); err != nil {
					t.Fatal(err)
				}
			}
			var log bytes.Buffer
			rep, err := TrainSumThenTrack(context.Background(), Run{Pretrained: tc.pretrained, Data: data, Out: out, Log: &log},
				fakePart(t, "summarizer", 0, "s", nil), fakePart(t, "tracker", 0.25, "t", tc.trackerErr))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				if _, serr := os.Stat(filepath.Join(out, checkpoint.ManifestFile)); serr == nil {
					t.Errorf("a failed run sealed %s", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sdir, tdir := filepath.Join(out, checkpoint.VariantSummarizerDir), filepath.Join(out, checkpoint.VariantTrackerDir)
			if want := "sum_then_track: summarizer part -> " + sdir + "\nsum_then_track: tracker part -> " + tdir + "\n"; log.String() != want {
				t.Errorf("log %q, want %q", log.String(), want)
			}
			if rep.Summarizer != "s" || rep.Tracker != "t" {
				t.Errorf("report %+v", rep)
			}
			b, err := os.ReadFile(filepath.Join(out, checkpoint.ReportFile))
			if err != nil || !strings.Contains(string(b), `"summarizer": "s"`) || !strings.Contains(string(b), `"tracker": "t"`) {
				t.Errorf("report.json %q, %v", b, err)
			}
			for _, p := range []struct{ dir, part string }{{out, ""}, {sdir, checkpoint.VariantSummarizerDir}, {tdir, checkpoint.VariantTrackerDir}} {
				m, err := ReadKind(p.dir, SumThenTrack, p.part, tc.pretrained)
				if err != nil || m.Part != p.part || m.AspectSet != "tracsum" {
					t.Errorf("%s: variant.json %+v, %v", p.dir, m, err)
				}
				man := readManifest(t, p.dir)
				if man.Kind != checkpoint.KindSumThenTrack || man.Part != p.part {
					t.Errorf("%s: manifest kind %q part %q", p.dir, man.Kind, man.Part)
				}
			}
			if th := readManifest(t, out).Settings.Threshold; th != 0.25 {
				t.Errorf("the directory of both states threshold %g, want the tracker's 0.25", th)
			}
		})
	}
}

func TestTrainEndToEnd(t *testing.T) {
	data := preparedDir(t)
	for _, tc := range []struct {
		desc     string
		existing *Meta
		fail     error
		err      string
	}{
		{desc: "fresh"},
		{desc: "other variant", existing: &Meta{Variant: SumThenTrack}, err: "end_to_end: --out: "},
		{desc: "training fails", fail: errors.New("broke"), err: "broke"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "ete")
			if tc.existing != nil {
				if err := os.MkdirAll(out, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := Write(out, *tc.existing); err != nil {
					t.Fatal(err)
				}
			}
			part := fakePart(t, "summarizer", 0, "r", tc.fail)
			train := part.Train
			part.Train = func(ctx context.Context, dir string) (checkpoint.Identity, string, error) {
				// variant.json is written last: an unfinished run is not loadable as END-TO-END.
				if _, err := Read(dir, EndToEnd, ""); err == nil {
					t.Errorf("%s holds variant.json before its training", dir)
				}
				return train(ctx, dir)
			}
			var log bytes.Buffer
			rep, err := TrainEndToEnd(context.Background(), Run{Data: data, Out: out, Log: &log}, part)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				if _, serr := os.Stat(filepath.Join(out, checkpoint.ManifestFile)); serr == nil {
					t.Errorf("a failed run sealed %s", out)
				}
				return
			}
			if err != nil || rep != "r" || log.String() != "end_to_end: summarizer part\n" {
				t.Fatalf("TrainEndToEnd = %q, %v (log %q)", rep, err, log.String())
			}
			if m, err := ReadKind(out, EndToEnd, "", false); err != nil || m.AspectSet != "tracsum" {
				t.Errorf("variant.json %+v, %v", m, err)
			}
			if man := readManifest(t, out); man.Kind != checkpoint.KindEndToEnd || man.Part != "" {
				t.Errorf("manifest kind %q part %q", man.Kind, man.Part)
			}
		})
	}
}

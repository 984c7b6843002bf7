package training

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// interrupted runs the toy task in a new directory and cancels it after step `at`.
func interrupted(t *testing.T, loop config.TrainLoop, at int) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o, _ := toyOptions(t, dir, loop)
	o.AfterStep = func(step int) {
		if step == at {
			cancel()
		}
	}
	if _, err := Run(ctx, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	return dir
}

// Issue 10 item 2: with state/ gone (a crash between removing the old state and renaming the new
// one in, or rm -rf) the rerun silently restarted from step 0. A missing or damaged resume point
// next to training progress must be refused.
func TestResumeMissingOrDamagedStateRefused(t *testing.T) {
	loop := toyLoop()
	loop.EvalEvery = 5
	for _, tc := range []struct {
		desc   string
		damage func(dir string) error
		want   string
	}{
		{"state removed", func(dir string) error { return os.RemoveAll(filepath.Join(dir, StateDir)) }, "holds training progress"},
		{"variables missing", func(dir string) error { return os.Remove(filepath.Join(dir, StateDir, stateVariables)) }, "variables.safetensors"},
		{"state.json missing", func(dir string) error { return os.Remove(filepath.Join(dir, StateDir, stateFile)) }, "state.json"},
		{"state.json torn", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, StateDir, stateFile), []byte(`{"step": 7, "ep`), 0o644)
		}, "damaged resume point"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := interrupted(t, loop, 7)
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			o, _ := toyOptions(t, dir, loop)
			o.AfterStep = func(int) { t.Fatal("trained although the resume point is gone") }
			_, err := Run(context.Background(), o)
			if !errors.Is(err, ErrResume) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line wrapping ErrResume containing %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, BestDir, BestVariables)); err != nil {
				t.Errorf("the best checkpoint was touched: %v", err)
			}
		})
	}
}

// A run killed before its first resume point (only the fresh marker in state/) starts over, and
// what it left (metrics rows, best/) does not survive into the new run.
func TestFreshMarkerStartsOver(t *testing.T) {
	loop := toyLoop()
	loop.EvalEvery = 5
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, StateDir), 0o755)
	os.WriteFile(filepath.Join(dir, StateDir, stateFile), []byte(`{"fresh": true}`), 0o644)
	os.WriteFile(filepath.Join(dir, MetricsFile), []byte(`{"split":"dev","step":99,"accuracy":0}`+"\n"), 0o644)
	if rp, err := ReadResumePoint(dir); rp != nil || err != nil {
		t.Fatalf("ReadResumePoint = %v, %v; want nil, nil", rp, err)
	}
	o, _ := toyOptions(t, dir, loop)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed {
		t.Error("resumed from the fresh marker")
	}
	if rows := metricsRows(t, dir); rows[0]["step"] == 99.0 {
		t.Error("the killed run's metrics row survived")
	}
}

func metricsRows(t *testing.T, dir string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var row map[string]any
		if err := json.Unmarshal(line, &row); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		rows = append(rows, row)
	}
	return rows
}

// Issue 10 item 13: after a kill, metrics.jsonl held the rows the killed run wrote after its last
// resume point twice, and the train row of the resumed window covered only part of it. Rows must
// be unique per (split, step), and the train loss of a window split by an interruption must equal
// the uninterrupted run's.
func TestResumeMetricsRowsUniqueAndWhole(t *testing.T) {
	loop := toyLoop()
	loop.EvalEvery = 5
	full := t.TempDir()
	o, _ := toyOptions(t, full, loop)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want := metricsRows(t, full)

	dir := interrupted(t, loop, 7)
	// What a run killed after writing step 10's rows, before saving its resume point, leaves.
	f, _ := os.OpenFile(filepath.Join(dir, MetricsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"split":"train","step":10,"loss":1}` + "\n" + `{"split":"dev","step":10,"accuracy":0.5}` + "\n" + `{"split":"tr`)
	f.Close()
	o2, _ := toyOptions(t, dir, loop)
	if _, err := Run(context.Background(), o2); err != nil {
		t.Fatal(err)
	}
	got := metricsRows(t, dir)
	if len(got) != len(want) {
		t.Fatalf("%d metrics rows after resume, %d without interruption", len(got), len(want))
	}
	for i := range want {
		for _, k := range []string{"split", "step", "loss", "accuracy"} {
			if got[i][k] != want[i][k] {
				t.Errorf("row %d %s = %v after resume, %v without interruption", i, k, got[i][k], want[i][k])
			}
		}
	}
}

// Issue 10 item 6: resuming with changed hyperparameters proceeded and config.yaml then recorded
// settings that were not those trained with.
func TestCheckConfig(t *testing.T) {
	base := config.Default()
	base.Seed, base.Tracker.Train.LearningRate = 5, 0.001
	lr := base
	lr.Tracker.Train.LearningRate = 0.002
	seed := base
	seed.Seed = 6
	evalOnly := base
	evalOnly.Eval.Workers = 7
	summ := base
	summ.Summarizer.BeamSize++
	rescoring := base
	rescoring.Tracker.ContextRescoring = !base.Tracker.ContextRescoring
	for _, tc := range []struct {
		desc     string
		cur      config.Config
		progress bool
		done     bool // the run finished
		allow    bool
		want     string // error substring; "" for success
	}{
		{desc: "same settings", cur: base, progress: true},
		{desc: "learning rate", cur: lr, progress: true, want: "tracker.train.learning_rate: 0.001 -> 0.002"},
		{desc: "seed", cur: seed, progress: true, want: "seed: 5 -> 6"},
		{desc: "other sections ignored", cur: evalOnly, progress: true},
		{desc: "other task ignored", cur: summ, progress: true},
		{desc: "no progress yet", cur: lr},
		{desc: "allowed", cur: lr, progress: true, allow: true},
		// Issue 35 item 21: extending a finished run trained nothing but rewrote its config.yaml.
		{desc: "finished run", cur: lr, progress: true, done: true, allow: true, want: "finished at step 12 with other training settings (tracker.train.learning_rate: 0.001 -> 0.002); a finished run is not trained further, even with --allow-changed-config"},
		{desc: "finished run, same settings", cur: base, progress: true, done: true},
		{desc: "finished run, settings applied after the loop", cur: rescoring, progress: true, done: true, allow: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			if err := base.WriteFile(filepath.Join(dir, "config.yaml")); err != nil {
				t.Fatal(err)
			}
			if tc.progress {
				os.MkdirAll(filepath.Join(dir, StateDir), 0o755)
				os.WriteFile(filepath.Join(dir, StateDir, stateFile), []byte(fmt.Sprintf(`{"step": 12, "done": %v}`, tc.done)), 0o644)
				os.WriteFile(filepath.Join(dir, StateDir, stateVariables), nil, 0o644)
			}
			var log bytes.Buffer
			err := CheckConfig(dir, "config.yaml", &tc.cur, "tracker", tc.allow, &log)
			if tc.want != "" {
				if !errors.Is(err, ErrResume) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--allow-changed-config") {
					t.Fatalf("err = %v, want ErrResume listing %q", err, tc.want)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); !bytes.Contains(b, []byte("learning_rate: 0.001")) {
					t.Errorf("config.yaml changed by a refused run:\n%s", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, keptErr := os.Stat(filepath.Join(dir, "config.step-12.yaml"))
			if tc.allow != (keptErr == nil) || tc.allow != strings.Contains(log.String(), "WARNING") {
				t.Errorf("allow=%v: config.step-12.yaml %v, log %q", tc.allow, keptErr, log.String())
			}
		})
	}
}

// Issue 10 item 7: `train --task summarizer --out TRACKER_CHECKPOINT` trained into the tracker's
// directory. An output holding another kind of directory is refused before anything is written;
// a file is refused, and a locked directory too.
func TestLockOutDir(t *testing.T) {
	parent := t.TempDir()
	mk := func(name string, files ...string) string {
		dir := filepath.Join(parent, name)
		os.MkdirAll(dir, 0o755)
		for _, f := range files {
			os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o644)
		}
		return dir
	}
	// sealed is a finished checkpoint of kind on backbone, as its manifest states it.
	sealed := func(name, kind, backbone string, files ...string) string {
		dir := mk(name, files...)
		m := checkpoint.Manifest{FormatVersion: checkpoint.ManifestVersion, Kind: kind, Task: kind, Backbone: checkpoint.Backbone{Type: backbone}}
		if err := checkpoint.WriteJSON(filepath.Join(dir, checkpoint.ManifestFile), &m); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	file := filepath.Join(parent, "file")
	os.WriteFile(file, []byte("keep"), 0o644)
	for _, tc := range []struct {
		desc, dir, marker, task string
		wantIs                  error
		want                    string
	}{
		{"tracker checkpoint as summarizer out", sealed("tr", "tracker", "scratch", "hparams.json", "config.yaml"), "summarizer.json", "summarizer", ErrResume, "holds a tracker checkpoint"},
		{"summarizer checkpoint as tracker out", sealed("su", "summarizer", "scratch", "summarizer.json"), "hparams.json", "tracker", ErrResume, "holds a summarizer checkpoint"},
		{"prepared directory", mk("pr", "manifest.json", "config.yaml"), "hparams.json", "tracker", ErrResume, "holds a prepared directory"},
		{"pretrained checkpoint as tracker out", sealed("pt", "tracker", "causal_lm", "pretrained.json", "report.json"), "hparams.json", "tracker", ErrResume, "holds a pretrained tracker checkpoint"},
		{"other files", mk("ot", "notes.txt"), "hparams.json", "tracker", ErrResume, "is not a tracker checkpoint"},
		{"regular file", file, "hparams.json", "tracker", atomicio.ErrNotDir, "refusing to replace it"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			l, err := LockOutDir(tc.dir, tc.marker, tc.task)
			if err == nil {
				l.Release()
			}
			if !errors.Is(err, tc.wantIs) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.wantIs, tc.want)
			}
		})
	}
	// A run that fails after taking the lock of a new --out, before writing, leaves no empty directory.
	fresh := filepath.Join(parent, "fresh")
	lf, err := LockOutDir(fresh, "hparams.json", "tracker")
	if err != nil {
		t.Fatal(err)
	}
	lf.Release()
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LockOutDir then Release of a new --out left %s behind (stat: %v)", fresh, err)
	}
	own := mk("own", "hparams.json", ".config.yaml.tmp-1", ".state.tmp-2")
	os.MkdirAll(filepath.Join(own, BestDir, ".model.safetensors.tmp-3"), 0o755)
	l, err := LockOutDir(own, "hparams.json", "tracker")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockOutDir(own, "hparams.json", "tracker"); !errors.Is(err, atomicio.ErrLocked) {
		t.Errorf("second lock: %v, want ErrLocked", err)
	}
	// Through a symlink, the same directory is the same lock.
	link := filepath.Join(parent, "link")
	os.Symlink(own, link)
	if _, err := LockOutDir(link, "hparams.json", "tracker"); !errors.Is(err, atomicio.ErrLocked) {
		t.Errorf("lock through a symlink: %v, want ErrLocked", err)
	}
	l.Release()
	for _, p := range []string{".config.yaml.tmp-1", ".state.tmp-2", filepath.Join(BestDir, ".model.safetensors.tmp-3")} {
		if _, err := os.Stat(filepath.Join(own, p)); err == nil {
			t.Errorf("stale %s not removed", p)
		}
	}
}

// Issue 10 item 2: a crash between renaming the old state/ aside and the new one in left only
// .state.old; the next run must resume from it.
func TestResumeFromAsideState(t *testing.T) {
	loop := toyLoop()
	loop.EvalEvery = 5
	dir := interrupted(t, loop, 7)
	if err := os.Rename(filepath.Join(dir, StateDir), filepath.Join(dir, ".state.old")); err != nil {
		t.Fatal(err)
	}
	l, err := LockOutDir(dir, "nothing", "toy")
	if err == nil {
		l.Release()
	}
	// The toy directory has no marker file: LockOutDir refuses it, but only after the repair.
	if _, err := os.Stat(filepath.Join(dir, StateDir, stateFile)); err != nil {
		t.Fatalf("state/ not restored from .state.old: %v", err)
	}
	rp, err := ReadResumePoint(dir)
	if err != nil || rp == nil || rp.Step != 7 {
		t.Fatalf("resume point %+v, %v; want step 7", rp, err)
	}
}

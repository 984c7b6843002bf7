package training

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// listDir returns the names in dir, sorted ("" entries for none).
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestOverwrite: issue 23 item 3, train had no "start fresh". --overwrite replaces a previous run
// in --out, but only once the new run has finished: while it trains, and when it fails, --out
// still holds the previous run; a directory that is no training output is never replaced.
func TestOverwrite(t *testing.T) {
	previous := func(t *testing.T, out string) {
		if err := os.MkdirAll(filepath.Join(out, StateDir), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{checkpoint.HyperparamsFile, checkpoint.MetricsFile} {
			if err := os.WriteFile(filepath.Join(out, f), []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	trainErr := errors.New("training failed")
	tests := []struct {
		desc     string
		setup    func(t *testing.T, out string)
		fail     bool
		intoOut  bool     // train runs into --out itself (nothing to replace)
		want     []string // --out's entries afterwards
		err      error    // an error wrapping this
		errText  string   // and containing this
		notTrain bool     // train is not called
	}{
		{desc: "absent --out: trained in place", setup: func(*testing.T, string) {}, intoOut: true, want: []string{"new.json"}},
		{desc: "empty --out: trained in place", setup: func(t *testing.T, out string) {
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
		}, intoOut: true, want: []string{"new.json"}},
		{desc: "previous run replaced once finished", setup: previous, want: []string{"new.json"}},
		{desc: "failed run leaves the previous one", setup: previous, fail: true,
			want: []string{checkpoint.HyperparamsFile, checkpoint.MetricsFile, StateDir}, err: trainErr},
		{desc: "a directory that is no training run is refused", setup: func(t *testing.T, out string) {
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, notTrain: true, want: []string{"notes.txt"}, err: atomicio.ErrForeign, errText: "holds no training run"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			root := t.TempDir()
			out := filepath.Join(root, "ck")
			tc.setup(t, out)
			before, _ := os.ReadDir(out)
			called := false
			err := Overwrite(out, io.Discard, func(dir string) error {
				called = true
				if (dir == out) != tc.intoOut {
					t.Errorf("trained into %s (--out %s)", dir, out)
				}
				// While the new run trains, --out is untouched.
				if now, _ := os.ReadDir(out); len(now) != len(before) {
					t.Errorf("--out changed during training: %d entries, was %d", len(now), len(before))
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, "new.json"), []byte("{}\n"), 0o644); err != nil {
					return err
				}
				if tc.fail {
					return trainErr
				}
				return nil
			})
			if tc.err == nil && err != nil {
				t.Fatal(err)
			}
			if tc.err != nil && (!errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.errText)) {
				t.Fatalf("error %v, want one wrapping %v with %q", err, tc.err, tc.errText)
			}
			if called == tc.notTrain {
				t.Errorf("train called: %v", called)
			}
			if got := listDir(t, out); !slices.Equal(got, tc.want) {
				t.Errorf("--out holds %v, want %v", got, tc.want)
			}
			// No temporary sibling or lock is left beside --out.
			if got := listDir(t, root); !slices.Equal(got, []string{"ck"}) {
				t.Errorf("%s holds %v, want only ck", root, got)
			}
		})
	}
}

// TestTrainThenSeal: the checkpoint is sealed only after a whole run that succeeded; a failed run
// or a part of a larger run leaves it unsealed, and a seal that fails (here: a directory holding
// no checkpoint) is the call's error.
func TestTrainThenSeal(t *testing.T) {
	errTrain := errors.New("train failed")
	tests := []struct {
		desc    string
		part    bool
		err     error
		wantErr string
	}{
		{desc: "failed run", err: errTrain, wantErr: errTrain.Error()},
		{desc: "part of a larger run", part: true},
		{desc: "whole run: sealed (refused here: no checkpoint)", wantErr: "checkpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			identity := func(int) checkpoint.Identity {
				return checkpoint.Identity{Kind: checkpoint.KindTracker, Task: "tracker"}
			}
			m, rep, err := TrainThenSeal(dir, tc.part, func() (int, string, error) { return 1, "report", tc.err }, identity)
			if tc.wantErr == "" {
				if err != nil || m != 1 || rep != "report" {
					t.Errorf("got %d, %q, %v; want the run's 1, \"report\", nil", m, rep, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
			if _, err := os.Stat(filepath.Join(dir, checkpoint.ManifestFile)); err == nil {
				t.Errorf("%s written", checkpoint.ManifestFile)
			}
		})
	}
}

package training

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// readStateJSON returns dir's state/state.json as raw JSON values.
func readStateJSON(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, StateDir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStateEpochMatchesLog: issue 23 item 4. state.json's "epoch" was the 0-based position while
// the log and metrics.jsonl print 1-based epochs, so a finished 8-epoch run said "epoch": 7. It is
// now the 1-based epoch of the last step, the position is "epoch_index", and a state file written
// before (0-based "epoch", no "epoch_index") still resumes where it stopped, bit for bit.
func TestStateEpochMatchesLog(t *testing.T) {
	loop := toyLoop() // 4 steps per epoch, 8 epochs, an evaluation per epoch
	full := t.TempDir()
	o, store := toyOptions(t, full, loop)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want := variables(t, store)
	rows := metricsRows(t, full)
	if st, last := readStateJSON(t, full), rows[len(rows)-1]; st["epoch"] != float64(8) || last["epoch"] != float64(8) {
		t.Errorf("finished run: state.json epoch %v, last metrics row epoch %v, want 8 and 8", st["epoch"], last["epoch"])
	}
	for _, tc := range []struct {
		desc       string
		at         int     // the step after which the run is interrupted
		epoch      float64 // state.json's "epoch" then: that of step `at`
		epochIndex float64 // and its resume position
	}{
		{"inside epoch 2", 6, 2, 1},
		{"at the end of epoch 2", 8, 2, 2},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := interrupted(t, loop, tc.at)
			st := readStateJSON(t, dir)
			if st["epoch"] != tc.epoch || st["epoch_index"] != tc.epochIndex {
				t.Fatalf("state.json epoch %v epoch_index %v, want %v and %v", st["epoch"], st["epoch_index"], tc.epoch, tc.epochIndex)
			}
			// The same resume point as a file written before epoch_index: "epoch" 0-based.
			st["epoch"] = st["epoch_index"]
			delete(st, "epoch_index")
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, StateDir, stateFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			o2, store2 := toyOptions(t, dir, loop)
			first := 0
			o2.AfterStep = func(step int) {
				if first == 0 {
					first = step
				}
			}
			res, err := Run(context.Background(), o2)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Resumed || first != tc.at+1 {
				t.Errorf("resumed=%v at step %d, want true at %d", res.Resumed, first, tc.at+1)
			}
			got := variables(t, store2)
			for name, w := range want {
				for i := range w {
					if got[name][i] != w[i] {
						t.Fatalf("%s[%d] = %v after resuming an old state file, %v without interruption", name, i, got[name][i], w[i])
					}
				}
			}
			if st := readStateJSON(t, dir); st["epoch"] != float64(8) || st["epoch_index"] == nil {
				t.Errorf("state.json after the resumed run: %v, want epoch 8 and an epoch_index", st)
			}
		})
	}
}

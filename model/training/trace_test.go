package training

import (
	"context"
	"testing"
)

// TestTrace: Options.Trace sees every optimizer step in order with the micro-batches it trained on
// (GradAccumulation of them) and its loss, which the GPU check writes for its reference.
func TestTrace(t *testing.T) {
	loop := toyLoop() // 4 steps per epoch of 2 micro-batches of 32, 8 epochs
	loop.Epochs = 1
	o, _ := toyOptions(t, t.TempDir(), loop)
	var steps []int
	o.Trace = func(step int, group []Batch, loss float64) {
		steps = append(steps, step)
		if len(group) != loop.GradAccumulation || group[0].Examples != loop.BatchSize || loss <= 0 {
			t.Errorf("step %d: %d micro-batches of %d examples, loss %g", step, len(group), group[0].Examples, loss)
		}
	}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 4 || steps[0] != 1 || steps[3] != 4 {
		t.Errorf("traced steps %v, want 1 to 4", steps)
	}
}

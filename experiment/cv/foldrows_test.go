package cv

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/model/checkpoint"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/model/training"
)

// TestCVResumeVerifiesFoldRows is the regression test of issue 22 defect 9 and its rough edges:
// a cross-validation resume took a fold checkpoint trained by a plain train (on other rows, its
// test abstracts among them) as "already finished", reported a deleted fold-k/ as "already done",
// and did not notice bit flips in a fold checkpoint; a plain train into CV/fold-k was not blocked.
// Now every fold records the abstracts it was trained on (rows.json in the checkpoint, rows in
// fold-k.json) and its checkpoint's sha256, and a resume verifies them.
func TestCVResumeVerifiesFoldRows(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 5 tiny trackers")
	}
	ctx := context.Background()
	cfg := tinyConfig(t)
	data := preparedWithFolds(t, cfg, 3)
	out := filepath.Join(t.TempDir(), "cv")
	var log bytes.Buffer
	if _, err := Run(ctx, cfg, Options{Data: data, Out: out, Folds: 3, Log: &log}); err != nil {
		t.Fatal(err)
	}

	// A plain train into a fold directory is refused while the cross-validation exists.
	if err := training.CheckNotFold(filepath.Join(out, "fold-1")); err == nil || !strings.Contains(err.Error(), "inside the cross-validation directory") {
		t.Errorf("plain train into CV/fold-1: %v, want a refusal", err)
	}

	// A deleted fold-2/ is not "already done": the fold is trained again.
	if err := os.RemoveAll(filepath.Join(out, "fold-2")); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if _, err := Run(ctx, cfg, Options{Data: data, Out: out, Log: &log}); err != nil {
		t.Fatalf("rerun after deleting fold-2/: %v", err)
	}
	if n := strings.Count(log.String(), "already done"); n != 2 || !strings.Contains(log.String(), "fold-2 is missing; training it again") {
		t.Errorf("rerun after deleting fold-2/: %d folds taken as done, want 2:\n%s", n, log.String())
	}
	if _, err := os.Stat(filepath.Join(out, "fold-2", checkpoint.HyperparamsFile)); err != nil {
		t.Errorf("fold-2/ was not trained again: %v", err)
	}

	// A bit flip in a fold checkpoint is noticed, named, and nothing is replaced.
	weights := checkpoint.BestWeights(filepath.Join(out, "fold-0"))
	orig, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(orig)
	flipped[len(flipped)-3] ^= 0x10
	os.WriteFile(weights, flipped, 0o644)
	if _, err := Run(ctx, cfg, Options{Data: data, Out: out}); err == nil || !strings.Contains(err.Error(), weights+" does not match the sha256 recorded") {
		t.Errorf("bit flip in fold-0: %v, want a refusal naming %s", err, weights)
	}
	if got, _ := os.ReadFile(weights); !bytes.Equal(got, flipped) {
		t.Error("the damaged checkpoint was replaced silently")
	}
	os.WriteFile(weights, orig, 0o644)

	// The defect's reproduction: fold 1 replaced by a plain train on the whole prepared
	// directory (its test abstracts in the training data), its record gone as after a SIGKILL.
	fold1 := filepath.Join(out, "fold-1")
	os.RemoveAll(fold1)
	os.Remove(filepath.Join(out, "fold-1.json"))
	if _, _, err := tracker.Train(ctx, cfg, data, fold1, tracker.TrainOptions{Log: &log}); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	_, err = Run(ctx, cfg, Options{Data: data, Out: out, Log: &log})
	if !errors.Is(err, tracker.ErrCheckpoint) || !strings.Contains(err.Error(), "was trained on other rows") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("resume over a plain train's fold-1: %v, want a one-line refusal", err)
	}
	if strings.Contains(log.String(), "already finished") {
		t.Errorf("the plain train's checkpoint was taken for fold 1:\n%s", log.String())
	}
}

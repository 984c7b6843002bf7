package training

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// RowsFile, in a checkpoint directory, records which abstracts the checkpoint was trained,
// selected and scored on (Rows), so that a rerun into the directory with other rows (a
// cross-validation fold trained by a plain train, or the other way round) is refused instead of
// resumed (issue 22 defect 9).
const RowsFile = "rows.json"

// CrossValidationMarker is the file that marks a cross-validation directory (experiment/cv writes it
// first, before any fold): its fold-k/ subdirectories belong to the cross-validation, and a plain
// train into one is refused.
const CrossValidationMarker = checkpoint.CrossValidationSettingsFile

// Rows identifies the abstracts of each split a model was trained on: per split, the number of
// PMIDs and the sha256 of their sorted, newline-separated list.
type Rows struct {
	Train RowSet `json:"train"`
	Dev   RowSet `json:"dev"`
	Test  RowSet `json:"test"`
}

// RowSet is one split of Rows.
type RowSet struct {
	Abstracts int    `json:"abstracts"`
	SHA256    string `json:"sha256"`
}

// NewRows returns the Rows of three lists of PMIDs (repeats are counted once, order is ignored).
func NewRows(train, dev, test []string) Rows {
	return Rows{Train: rowSet(train), Dev: rowSet(dev), Test: rowSet(test)}
}

func rowSet(pmids []string) RowSet {
	ids := slices.Compact(slices.Sorted(slices.Values(pmids)))
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return RowSet{Abstracts: len(ids), SHA256: hex.EncodeToString(h.Sum(nil))}
}

// Differs names the splits on which r and the recorded o differ ("" when none), e.g. "train
// (120 abstracts now, 180 recorded), test (40 abstracts now, 40 recorded)".
func (r Rows) Differs(o Rows) string {
	var out []string
	for _, s := range []struct {
		name string
		a, b RowSet
	}{{"train", r.Train, o.Train}, {"dev", r.Dev, o.Dev}, {"test", r.Test, o.Test}} {
		if s.a != s.b {
			out = append(out, fmt.Sprintf("%s (%d abstracts now, %d recorded)", s.name, s.a.Abstracts, s.b.Abstracts))
		}
	}
	return strings.Join(out, ", ")
}

// CheckRows guards a rerun into the checkpoint directory dir against other rows, and records
// rows there. When dir holds training progress, its RowsFile must equal rows; a missing RowsFile
// (a checkpoint written before it existed) is accepted unless required (a cross-validation fold,
// whose rows must be proven). The refusal wraps ErrResume.
func CheckRows(dir string, rows Rows, required bool) error {
	path := filepath.Join(dir, RowsFile)
	rp, err := ReadResumePoint(dir)
	if err != nil {
		return err
	}
	if rp != nil {
		var old Rows
		err := atomicio.ReadJSON(path, &old, false)
		var pathErr *fs.PathError
		switch {
		case errors.Is(err, os.ErrNotExist) && required:
			return fmt.Errorf("%w: %s holds training progress (step %d) but no %s, so the rows it was trained on are unknown; delete it to retrain it", ErrResume, dir, rp.Step, RowsFile)
		case errors.Is(err, os.ErrNotExist):
		case errors.As(err, &pathErr):
			return fmt.Errorf("training: %w", err)
		case err != nil:
			return fmt.Errorf("%w: %w; delete %s to retrain it", ErrResume, err, dir)
		default:
			if d := rows.Differs(old); d != "" {
				return fmt.Errorf("%w: %s was trained on other rows than these (%s differ, %s); use another --out or delete it", ErrResume, dir, d, RowsFile)
			}
		}
	}
	return atomicio.WriteJSON(path, rows)
}

// CheckNotFold refuses a plain training into a fold directory of a cross-validation (out's parent
// holds CrossValidationMarker): the fold belongs to the cross-validation, which trains it on its
// own rows under its own lock, and a checkpoint trained there on other rows would be taken for the
// fold (issue 22 defect 9).
func CheckNotFold(out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	parent := filepath.Dir(abs)
	if _, err := os.Stat(filepath.Join(parent, CrossValidationMarker)); err == nil {
		return fmt.Errorf("--out %s is inside the cross-validation directory %s (it holds %s): its folds are trained by train --folds on their own rows; choose another --out", out, parent, CrossValidationMarker)
	}
	return nil
}

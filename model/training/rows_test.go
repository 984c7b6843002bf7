package training

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckRows is the model/training part of the regression test of issue 22 defect 9 (the
// cross-validation's part is experiment/cv's TestCVResumeVerifiesFoldRows): a checkpoint records the
// abstracts it was trained on, and a resume on other rows is refused; a checkpoint without the
// record is accepted for a plain training but not for a cross-validation fold.
func TestCheckRows(t *testing.T) {
	rows := NewRows([]string{"1", "2", "2", "3"}, []string{"4"}, []string{"5"})
	if rows.Train.Abstracts != 3 || NewRows([]string{"3", "1", "2"}, []string{"4"}, []string{"5"}) != rows {
		t.Fatalf("rows %+v: repeats and order must not count", rows)
	}
	other := NewRows([]string{"1", "2", "3", "5"}, []string{"4"}, nil)
	withProgress := func(t *testing.T) string {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, StateDir), 0o755)
		os.WriteFile(filepath.Join(dir, StateDir, stateFile), []byte(`{"step": 3}`), 0o644)
		os.WriteFile(filepath.Join(dir, StateDir, stateVariables), []byte("x"), 0o644)
		return dir
	}
	for _, tc := range []struct {
		desc     string
		recorded *Rows
		required bool
		want     string // "" = accepted
	}{
		{"same rows", &rows, true, ""},
		{"other rows", &other, false, "was trained on other rows than these (train (3 abstracts now, 4 recorded), test (1 abstracts now, 0 recorded) differ"},
		{"no record, plain training", nil, false, ""},
		{"no record, a fold", nil, true, "no rows.json, so the rows it was trained on are unknown"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := withProgress(t)
			if tc.recorded != nil {
				fresh := t.TempDir()
				if err := CheckRows(fresh, *tc.recorded, false); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(fresh, RowsFile))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(dir, RowsFile), b, 0o644)
			}
			err := CheckRows(dir, rows, tc.required)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (!errors.Is(err, ErrResume) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want ErrResume containing %q", err, tc.want)
			}
		})
	}
}

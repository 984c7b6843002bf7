package config

import (
	"strings"
	"testing"
)

// TestEvalNLIValidate: each eval.nli key's bad value is named in the error.
func TestEvalNLIValidate(t *testing.T) {
	for _, tc := range []struct {
		desc string
		edit func(*Eval)
		want string // "" = valid
	}{
		{"defaults", func(*Eval) {}, ""},
		{"nli judge with a model", func(e *Eval) { e.Judge, e.NLI.Model = "nli", "/models/nli" }, ""},
		{"nli judge without a model", func(e *Eval) { e.Judge = "nli" }, "eval.nli.model: must be set when eval.judge is nli"},
		{"threshold 0", func(e *Eval) { e.NLI.Threshold = 0 }, "eval.nli.threshold: must be in (0, 1]"},
		{"threshold above 1", func(e *Eval) { e.NLI.Threshold = 1.5 }, "eval.nli.threshold: must be in (0, 1]"},
		{"batch size 0", func(e *Eval) { e.NLI.BatchSize = 0 }, "eval.nli.batch_size: must be >= 1"},
		{"max length 4", func(e *Eval) { e.NLI.MaxLength = 4 }, "eval.nli.max_length: must be 0 (the model's limit) or >= 8"},
		{"unknown judge", func(e *Eval) { e.Judge = "true" }, `eval.judge: must be one of [lexical llm nli], got "true"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			e := DefaultEval()
			tc.edit(&e)
			err := e.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

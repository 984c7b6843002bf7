package dataset

import (
	"fmt"
	"iter"
	"os"
	"strings"
)

// Format is an annotated input format: the files it claims and the reader that streams their
// instances, validated by a caller-owned Validator (shared across files, so that duplicates
// between files are caught too).
type Format struct {
	// Name names the format in messages ("jsonl").
	Name string
	// Extensions are the file name endings the format claims (".jsonl"), matched as written.
	Extensions []string
	// Stream yields the validated instances of one file in order; a failure is yielded once, as
	// an error naming file and record, and ends the sequence.
	Stream func(v *Validator, path string) iter.Seq2[Instance, error]
}

// JSONL is the TracSum/PCoA JSONL format, one instance per line (StreamWith).
var JSONL = Format{Name: "jsonl", Extensions: []string{".jsonl", ".json"}, Stream: streamJSONL}

// Formats are the annotated input formats, tried in order by FormatOf. Supporting another format
// (CSV, Parquet) means writing its reader and adding it here: prepare (Inputs), infer (--input)
// and every caller of ReadInput or StreamWith pick it by file name.
var Formats = []Format{JSONL}

// FormatOf returns the annotated format whose extension ends path.
func FormatOf(path string) (Format, bool) {
	for _, f := range Formats {
		for _, ext := range f.Extensions {
			if strings.HasSuffix(path, ext) {
				return f, true
			}
		}
	}
	return Format{}, false
}

// formatFor is FormatOf for a path that must hold instances: one that no format claims is read as
// JSONL, the benchmark's own format, whatever its name.
func formatFor(path string) Format {
	if f, ok := FormatOf(path); ok {
		return f
	}
	return JSONL
}

// ReadInput reads an inference input by its kind, the one place where a path is mapped to a
// reader:
//   - a directory is a prepared directory: the instances of split's end_to_end rows (SplitTest
//     when split is empty);
//   - a file an annotated Format claims (FormatOf) gives its validated instances;
//   - anything else is raw text (ReadRaw): abstracts without annotation, and no instances.
//
// Exactly one of instances and abstracts is non-nil on success.
func ReadInput(path, split string) (instances []Instance, abstracts []Abstract, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if st.IsDir() {
		if split == "" {
			split = SplitTest
		}
		for row, err := range ReadShards[EndToEndRow](path, TaskEndToEnd, split) {
			if err != nil {
				return nil, nil, err
			}
			in := Instance{PMID: row.PMID, Aspect: row.Aspect, Document: row.Document, Summary: row.Summary, Indexes: []int{}}
			for _, c := range row.Citations {
				in.Indexes = append(in.Indexes, int(c))
			}
			instances = append(instances, in)
		}
		if len(instances) == 0 {
			return nil, nil, fmt.Errorf("%w: %s: split %q has no instances", ErrInput, path, split)
		}
		return instances, nil, nil
	}
	if f, ok := FormatOf(path); ok {
		v := NewValidator("auto")
		for in, err := range f.Stream(v, path) {
			if err != nil {
				return nil, nil, err
			}
			instances = append(instances, in)
		}
		return instances, nil, nil
	}
	abstracts, err = ReadRaw(path)
	if err != nil {
		return nil, nil, err
	}
	return nil, abstracts, nil
}

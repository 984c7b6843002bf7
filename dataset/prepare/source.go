package prepare

import (
	"context"
	"fmt"
	"iter"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/progress"
)

// source yields the instances of the run: input files (validated on every pass) or the synthetic
// sample (regenerated on every pass: cheaper than holding it).
//
// Files are read by their dataset.Format. When all of them are JSONL (the benchmark's format),
// lines are decoded in parallel by a pool of workers, the fast path; any other format is streamed
// through its own reader, validated again on every pass.
type source struct {
	inputs     []string
	set        string
	seed       int64
	sampleSize int
	// resolved is the aspect set found by scan; later passes decode with it, unvalidated.
	resolved string
	workers  int
}

// newSource returns the source of inputs (the synthetic sample when there is none).
func newSource(inputs []string, set string, seed int64, sampleSize, workers int) *source {
	return &source{inputs: inputs, set: set, seed: seed, sampleSize: sampleSize, workers: workers}
}

// allJSONL reports whether every input is a JSONL file, read by the parallel line decoder.
func (s *source) allJSONL() bool {
	for _, path := range s.inputs {
		if !isJSONL(path) {
			return false
		}
	}
	return true
}

// isJSONL reports whether path is read as JSONL: claimed by that format, or by none (StreamWith
// reads those as JSONL too).
func isJSONL(path string) bool {
	f, ok := dataset.FormatOf(path)
	return !ok || f.Name == dataset.JSONL.Name
}

// abstracts yields runs of instances that share a PMID (consecutive in the input), so that each
// document is tokenized once for all its aspects. It decodes JSONL files without validation: call
// it only after scan.
func (s *source) abstracts(ctx context.Context) iter.Seq2[[]dataset.Instance, error] {
	return func(yield func([]dataset.Instance, error) bool) {
		if len(s.inputs) == 0 {
			for i := range s.sampleSize {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				if !yield(dataset.SyntheticAbstract(s.seed, i), nil) {
					return
				}
			}
			return
		}
		var run []dataset.Instance
		push := func(in dataset.Instance) bool {
			if len(run) > 0 && run[0].PMID != in.PMID {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return false
				}
				if !yield(run, nil) {
					return false
				}
				run = nil
			}
			run = append(run, in)
			return true
		}
		if !s.allJSONL() {
			for in, err := range dataset.StreamWith(dataset.NewValidator(s.resolved), s.inputs...) {
				if err != nil {
					yield(nil, err)
					return
				}
				if !push(in) {
					return
				}
			}
		} else {
			decode := func(l dataset.Line) (dataset.Instance, error) { return dataset.DecodeValid(l, s.resolved) }
			for d, err := range parallelDecode(ctx, s.lines(), s.workers, decode) {
				if err == nil {
					err = d.err
				}
				if err != nil {
					yield(nil, err)
					return
				}
				if !push(d.in) {
					return
				}
			}
		}
		if len(run) > 0 {
			yield(run, nil)
		}
	}
}

// lines yields the lines of all input files in order (JSONL inputs only).
func (s *source) lines() iter.Seq2[dataset.Line, error] {
	return func(yield func(dataset.Line, error) bool) {
		for _, path := range s.inputs {
			for l, err := range dataset.Lines(path) {
				if !yield(l, err) || err != nil {
					return
				}
			}
		}
	}
}

type scanResult struct {
	keys      []string
	counts    dataset.Counts
	inputs    []dataset.InputFile
	aspectSet string
}

// scan validates the whole input and returns the split keys and counts.
func (s *source) scan(ctx context.Context, by string, bar *progress.Bar) (*scanResult, error) {
	res := &scanResult{inputs: []dataset.InputFile{}}
	if len(s.inputs) == 0 {
		// The sample's keys are known without generating it.
		res.aspectSet = dataset.AspectSetTracSum
		s.resolved = res.aspectSet
		aspects := dataset.Aspects(dataset.AspectSetTracSum)
		for i := range s.sampleSize {
			pmid := dataset.SyntheticPMID(i)
			if by == dataset.SplitByPMID {
				res.keys = append(res.keys, pmid)
			} else {
				for _, a := range aspects {
					res.keys = append(res.keys, dataset.GroupKey(by, pmid, a.Code))
				}
			}
		}
		// Negatives are counted from the end_to_end rows once written.
		res.counts = dataset.Counts{Abstracts: s.sampleSize, Instances: s.sampleSize * len(aspects)}
		return res, nil
	}
	v := dataset.NewValidator(s.set)
	seenPMID := map[string]struct{}{}
	for _, path := range s.inputs {
		info := dataset.InputFile{Path: path}
		sum, size, err := atomicio.SHA256(path)
		if err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		info.SHA256, info.Bytes = sum, size
		for in, err := range s.validated(ctx, v, path) {
			if err != nil {
				return nil, err
			}
			info.Instances++
			if bar != nil {
				bar.Add(1)
			}
			res.counts.Instances++
			if _, ok := seenPMID[in.PMID]; !ok {
				seenPMID[in.PMID] = struct{}{}
				res.counts.Abstracts++
				if by == dataset.SplitByPMID {
					res.keys = append(res.keys, in.PMID)
				}
			}
			if by == dataset.SplitByInstance {
				res.keys = append(res.keys, dataset.GroupKey(by, in.PMID, in.Aspect))
			}
		}
		res.inputs = append(res.inputs, info)
	}
	res.aspectSet = v.AspectSet()
	s.resolved = res.aspectSet
	return res, nil
}

// validated yields the records of one file checked by v, which is shared across files so that
// duplicates between files are caught too. A file of another format than JSONL goes through its
// reader. JSONL records are decoded and checked on their own in parallel; the checks against
// earlier records run here, in input order. The first record of the run goes through v.Parse
// alone, since it may decide the aspect set the others are parsed with.
func (s *source) validated(ctx context.Context, v *dataset.Validator, path string) iter.Seq2[dataset.Instance, error] {
	if !isJSONL(path) {
		return dataset.StreamWith(v, path)
	}
	return func(yield func(dataset.Instance, error) bool) {
		lines := dataset.Lines(path)
		if v.AspectSet() == "auto" {
			var first *dataset.Line
			for l, err := range lines {
				if err != nil {
					yield(dataset.Instance{}, err)
					return
				}
				first = &l
				break
			}
			if first == nil {
				return
			}
			in, err := v.Parse(first.File, first.Num, first.Data)
			if !yield(in, err) || err != nil {
				return
			}
			lines = skipLines(dataset.Lines(path), 1)
		}
		for d, err := range parallelDecode(ctx, lines, s.workers, func(l dataset.Line) (dataset.Instance, error) {
			return v.ParseRecord(l.File, l.Num, l.Data)
		}) {
			if err == nil {
				err = d.err
			}
			if err == nil {
				err = v.Check(d.line.File, d.line.Num, &d.in)
			}
			if !yield(d.in, err) || err != nil {
				return
			}
		}
	}
}

func skipLines(seq iter.Seq2[dataset.Line, error], n int) iter.Seq2[dataset.Line, error] {
	return func(yield func(dataset.Line, error) bool) {
		i := 0
		for l, err := range seq {
			if err == nil && i < n {
				i++
				continue
			}
			if !yield(l, err) {
				return
			}
		}
	}
}

package eval

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/cli"
)

// Sentinel errors of the evaluator's input checks; errors wrap them with the file and line.
var (
	// ErrMissing marks a reference instance without a prediction (allowed with missing=empty).
	ErrMissing = errors.New("missing prediction")
	// ErrDuplicate marks a second record for the same (PMID, Aspect) in one file.
	ErrDuplicate = errors.New("duplicate instance")
	// ErrIndexRange marks a cited sentence index outside the abstract.
	ErrIndexRange = errors.New("cited index outside the document")
	// ErrUnknownInstance marks a prediction whose (PMID, Aspect) is not in the references.
	ErrUnknownInstance = errors.New("prediction for an instance absent from the references")
	// ErrMalformed marks a record that is not valid JSON of the expected shape (the reader's
	// dataset.ErrMalformedRecord) or a reference that cannot be scored.
	ErrMalformed = dataset.ErrMalformedRecord
	// ErrNoInstances marks a reference file without any record: there is nothing to score.
	ErrNoInstances = errors.New("no instances")
)

// checkOutDir refuses an --out directory that holds --pred or --ref (or is one of them, after
// symlinks, by inode): Run replaces the directory as a whole, which would delete the input. It is
// the rule every command shares (cli.CheckOutputs).
func checkOutDir(out, pred, ref string) error {
	return cli.CheckOutputs(map[string]string{"--pred": pred, "--ref": ref}, map[string]string{"--out": out})
}

// Pair is a reference and the prediction scored against it.
type Pair struct {
	Ref  dataset.Record
	Pred dataset.Record
}

// Join pairs predictions with references on (PMID, Aspect), in reference order, and checks them:
// a reference must have a document, consistent negatives and citations inside its document; a
// prediction must match a reference, appear once and cite only sentences of the reference's
// document. A reference without prediction is an error (ErrMissing) unless missingEmpty, which
// scores it against an empty ("Unknown.", no citation) prediction.
func Join(refs, preds []dataset.Record, missingEmpty bool) ([]Pair, error) {
	if len(refs) == 0 {
		// Zero instances would report every metric as 0 (or NaN) with exit 0.
		return nil, fmt.Errorf("references: %w: the file holds no record", ErrNoInstances)
	}
	byKey := make(map[dataset.Key]int, len(refs))
	for i := range refs {
		r := &refs[i]
		if j, dup := byKey[r.Key()]; dup {
			return nil, fmt.Errorf("%s:%d: %w: PMID %s aspect %q already at line %d",
				r.File, r.Line, ErrDuplicate, r.PMID, r.Aspect, refs[j].Line)
		}
		byKey[r.Key()] = i
		if len(r.Document) == 0 {
			return nil, fmt.Errorf("%s:%d: %w: reference has no Document", r.File, r.Line, ErrMalformed)
		}
		if err := checkIndexes(r, len(r.Document)); err != nil {
			return nil, err
		}
		if !dataset.NegativeConsistent(r.Summary, r.Indexes) {
			return nil, fmt.Errorf("%s:%d: %w: summary and citations disagree: a positive reference needs citations, a negative one (\"Unknown.\") none (summary %q, %d citations)",
				r.File, r.Line, ErrMalformed, clip(r.Summary, 40), len(r.Indexes))
		}
	}
	has := make([]bool, len(refs)) // whether each reference has a prediction
	seen := make([]int, len(refs)) // and the line of that prediction
	pairs := make([]Pair, len(refs))
	for i := range preds {
		p := &preds[i]
		j, ok := byKey[p.Key()]
		if !ok {
			return nil, fmt.Errorf("%s:%d: %w: PMID %s aspect %q", p.File, p.Line, ErrUnknownInstance, p.PMID, p.Aspect)
		}
		if has[j] {
			return nil, fmt.Errorf("%s:%d: %w: prediction for PMID %s aspect %q already at line %d",
				p.File, p.Line, ErrDuplicate, p.PMID, p.Aspect, seen[j])
		}
		has[j], seen[j] = true, p.Line
		if err := checkIndexes(p, len(refs[j].Document)); err != nil {
			return nil, err
		}
		if err := checkScores(p, len(refs[j].Document)); err != nil {
			return nil, err
		}
		pairs[j] = Pair{Ref: refs[j], Pred: *p}
	}
	var missing []string
	for j := range refs {
		if has[j] {
			continue
		}
		if !missingEmpty {
			missing = append(missing, fmt.Sprintf("%s:%d (PMID %s aspect %q)", refs[j].File, refs[j].Line, refs[j].PMID, refs[j].Aspect))
			continue
		}
		empty := dataset.Record{Instance: dataset.Instance{PMID: refs[j].PMID, Aspect: refs[j].Aspect, Summary: dataset.UnknownSummary}}
		pairs[j] = Pair{Ref: refs[j], Pred: empty}
	}
	if len(missing) > 0 {
		total, more := len(missing), ""
		if total > 5 {
			more = fmt.Sprintf(" and %d more", total-5)
			missing = missing[:5]
		}
		return nil, fmt.Errorf("%w for %d reference instance(s): %s%s (use --missing=empty to score them as \"Unknown.\")",
			ErrMissing, total, strings.Join(missing, ", "), more)
	}
	return pairs, nil
}

// checkIndexes rejects citations outside a document of n sentences and drops repeated indices
// (citations are a set).
func checkIndexes(r *dataset.Record, n int) error {
	for _, i := range r.Indexes {
		if i < 0 || i >= n {
			return fmt.Errorf("%s:%d: %w: index %d, the document of PMID %s has %d sentences (0..%d)",
				r.File, r.Line, ErrIndexRange, i, r.PMID, n, n-1)
		}
	}
	idx := slices.Clone(r.Indexes)
	slices.Sort(idx)
	r.Indexes = slices.Compact(idx)
	return nil
}

// checkScores rejects tracker scores (infer's optional per-sentence Scores) that are not one
// probability per sentence of the reference's document: the report's histogram and threshold
// sweep pair each score with a sentence, so a list of another length can only be misread.
func checkScores(r *dataset.Record, n int) error {
	if r.Scores == nil {
		return nil
	}
	if len(r.Scores) != n {
		return fmt.Errorf("%s:%d: %w: %d Scores, the document of PMID %s has %d sentences",
			r.File, r.Line, ErrMalformed, len(r.Scores), r.PMID, n)
	}
	for i, s := range r.Scores {
		if !(s >= 0 && s <= 1) {
			return fmt.Errorf("%s:%d: %w: Scores[%d] = %g is not a probability in [0, 1]", r.File, r.Line, ErrMalformed, i, s)
		}
	}
	return nil
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}

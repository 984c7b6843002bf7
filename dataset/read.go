package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tracksum/tracksum/internal/atomicio"
)

// ReadInstances reads a TracSum or PCoA JSONL file strictly (see StreamInstances), detecting the
// aspect set from its first record.
func ReadInstances(path string) ([]Instance, error) {
	var out []Instance
	for in, err := range StreamInstances("auto", path) {
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

// StreamInstances yields the instances of one or more JSONL files in order, validating each record
// and the records against each other (across files): a failure is yielded once, as a
// *ValidationError naming file, line and field, and ends the sequence. set is "tracsum", "pcoa" or
// "auto" (decided by the first record). Aspect codes are returned in canonical form.
//
// Only a compact hash per PMID and per (PMID, aspect) is kept, so memory grows by a few dozen bytes
// per record, never by documents.
func StreamInstances(set string, paths ...string) iter.Seq2[Instance, error] {
	return StreamWith(NewValidator(set), paths...)
}

// StreamWith is StreamInstances with a caller-owned validator, so that records of files read in
// separate calls are still checked against each other. Each file is read by its Format (FormatOf;
// JSONL when none claims it).
func StreamWith(v *Validator, paths ...string) iter.Seq2[Instance, error] {
	return func(yield func(Instance, error) bool) {
		for _, path := range paths {
			for in, err := range formatFor(path).Stream(v, path) {
				if !yield(in, err) || err != nil {
					return
				}
			}
		}
	}
}

// rawInstance mirrors Instance with pointers, so that a missing field can be told from a zero one.
type rawInstance struct {
	PMID      *string   `json:"PMID"`
	Document  *[]string `json:"Document"`
	Aspect    *string   `json:"Aspect"`
	Summary   *string   `json:"Summary"`
	Indexes   *[]int    `json:"Indexes"`
	Sentences *[]string `json:"Sentences"`
	Phrases   *[]string `json:"Phrases"`
	Revise    *bool     `json:"Revise"`
}

// streamJSONL is the JSONL format's reader: each non-blank line is one record, parsed and checked
// by v.
func streamJSONL(v *Validator, path string) iter.Seq2[Instance, error] {
	return func(yield func(Instance, error) bool) {
		for l, err := range Lines(path) {
			if err != nil {
				yield(Instance{}, err)
				return
			}
			in, verr := v.Parse(l.File, l.Num, l.Data)
			if !yield(in, verr) || verr != nil {
				return
			}
		}
	}
}

// Line is one non-blank line of a JSONL file (atomicio's).
type Line = atomicio.Line

// Lines yields the non-blank lines of a JSONL file (a leading byte-order mark removed), for
// callers that decode in parallel what an earlier pass validated (see DecodeValid).
func Lines(path string) iter.Seq2[Line, error] {
	return func(yield func(Line, error) bool) {
		for l, err := range atomicio.Lines(path, 0) {
			var pathErr *fs.PathError
			if errors.As(err, &pathErr) {
				err = fmt.Errorf("read instances: %w", err)
			}
			if !yield(l, err) {
				return
			}
		}
	}
}

// ReadLines is atomicio.ReadLines, the one JSONL line reader of every JSONL input (benchmark files,
// predictions, references), with its line limit (atomicio.MaxJSONLLine): it yields the non-blank
// lines of r with their 1-based numbers, a UTF-8 byte-order mark at the start removed. Errors name
// the file (name) and line.
func ReadLines(r io.Reader, name string) iter.Seq2[Line, error] {
	return atomicio.ReadLines(r, name, 0)
}

// DecodeValid decodes a line that a Validator of the given (resolved) aspect set accepted before,
// without the checks: the fast path of a second pass over the same file. The aspect code is
// canonicalised as Parse does. An error still names the line (the file changed in between).
func DecodeValid(l Line, set string) (Instance, error) {
	var in Instance
	if err := json.Unmarshal(l.Data, &in); err != nil {
		return Instance{}, &ValidationError{File: l.File, Line: l.Num, Err: ErrMalformedJSON, Msg: err.Error() + " (file changed since validation?)"}
	}
	a, ok := LookupAspect(set, in.Aspect)
	if !ok {
		return Instance{}, &ValidationError{File: l.File, Line: l.Num, Field: "Aspect", Err: ErrUnknownAspect, Msg: fmt.Sprintf("%q is not in the %s set (file changed since validation?)", in.Aspect, set)}
	}
	in.Aspect = a.Code
	for _, i := range in.Indexes {
		if i < 0 || i >= len(in.Document) {
			return Instance{}, &ValidationError{File: l.File, Line: l.Num, Field: "Indexes", Err: ErrIndexRange, Msg: "file changed since validation?"}
		}
	}
	return in, nil
}

// Validator checks records one by one and against the records it saw before: duplicate
// (PMID, aspect) pairs and a PMID seen with two different documents.
type Validator struct {
	set     string
	docs    map[string]docSeen
	seenKey map[uint64]position
	files   []string
}

type docSeen struct {
	hash uint64
	pos  position
}

type position struct {
	file int32
	line int32
}

// NewValidator returns a validator for an aspect set ("tracsum", "pcoa" or "auto").
func NewValidator(set string) *Validator {
	if set == "" {
		set = "auto"
	}
	return &Validator{set: set, docs: map[string]docSeen{}, seenKey: map[uint64]position{}}
}

// AspectSet returns the set in use: the configured one, or the detected one once a record was read
// ("auto" before).
func (v *Validator) AspectSet() string { return v.set }

func (v *Validator) fileIndex(file string) int32 {
	if n := len(v.files); n > 0 && v.files[n-1] == file {
		return int32(n - 1)
	}
	if i := slices.Index(v.files, file); i >= 0 {
		return int32(i)
	}
	v.files = append(v.files, file)
	return int32(len(v.files) - 1)
}

func (v *Validator) where(p position) string {
	return fmt.Sprintf("%s:%d", v.files[p.file], p.line)
}

// Parse decodes and validates one JSONL record found at file:line.
func (v *Validator) Parse(file string, line int, b []byte) (Instance, error) {
	in, set, err := v.parseRecord(file, line, b)
	if err != nil {
		return Instance{}, err
	}
	if err := v.Check(file, line, &in); err != nil {
		return Instance{}, err
	}
	v.set = set
	return in, nil
}

// ParseRecord decodes and checks one record on its own, without the checks against other records
// (see Check). Once the aspect set is known (configured, or detected by a first Parse) it only reads
// the validator, so several goroutines may call it at once; Check must then be called on the
// results in input order, from one goroutine.
func (v *Validator) ParseRecord(file string, line int, b []byte) (Instance, error) {
	in, _, err := v.parseRecord(file, line, b)
	return in, err
}

func (v *Validator) parseRecord(file string, line int, b []byte) (Instance, string, error) {
	fail := func(field string, err error, format string, args ...any) (Instance, string, error) {
		return Instance{}, "", &ValidationError{File: file, Line: line, Field: field, Err: err, Msg: fmt.Sprintf(format, args...)}
	}
	if !utf8.Valid(b) {
		// encoding/json turns each undecodable byte into U+FFFD without a word.
		warnf("%s:%d: invalid UTF-8 (not UTF-8 text?): the undecodable bytes become U+FFFD", file, line)
	}
	in, p := decodeRecord(b)
	if p != nil {
		return fail(p.field, p.err, "%s", p.msg)
	}
	if strings.TrimSpace(in.PMID) == "" {
		return fail("PMID", ErrEmptyField, "PMID is empty")
	}
	if len(in.Document) == 0 {
		return fail("Document", ErrEmptyDocument, "no sentences")
	}
	for i, s := range in.Document {
		if strings.TrimSpace(s) == "" {
			return fail(fmt.Sprintf("Document[%d]", i), ErrEmptyField, "empty sentence")
		}
		if n := longestWord(s); n > MaxWordBytes {
			warnf("%s:%d: Document[%d]: a word of %d bytes; the tokenizer breaks words longer than %d bytes into pieces", file, line, i, n, MaxWordBytes)
		}
	}
	set := v.set
	if set == "auto" {
		detected, ok := detectAspectSet(in.Aspect)
		if !ok {
			return fail("Aspect", ErrUnknownAspect, "%q is in neither the tracsum nor the pcoa set", in.Aspect)
		}
		set = detected
	}
	asp, ok := LookupAspect(set, in.Aspect)
	if !ok {
		return fail("Aspect", ErrUnknownAspect, "%q is not in the %s set", in.Aspect, set)
	}
	in.Aspect = asp.Code
	if strings.TrimSpace(in.Summary) == "" {
		return fail("Summary", ErrEmptyField, "summary is empty (negatives use %q)", UnknownSummary)
	}
	if p := checkCitations(&in); p != nil {
		return fail(p.field, p.err, "%s", p.msg)
	}
	return in, set, nil
}

// recordProblem is a defect of a record found before its file and line are added (the other
// fields of a ValidationError), so that the checks can live in helpers of their own.
type recordProblem struct {
	field string
	err   error
	msg   string
}

func problemf(field string, err error, format string, args ...any) *recordProblem {
	return &recordProblem{field: field, err: err, msg: fmt.Sprintf(format, args...)}
}

// decodeRecord decodes a record's JSON strictly (no unknown field, one value, every required
// field present) into an Instance.
func decodeRecord(b []byte) (Instance, *recordProblem) {
	var raw rawInstance
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return Instance{}, problemf(te.Field, ErrFieldType, "got JSON %s, want %s", te.Value, jsonTypeName(te.Type.String()))
		case errors.As(err, &se):
			return Instance{}, problemf("", ErrMalformedJSON, "%v (offset %d)", se, se.Offset)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
			return Instance{}, problemf(name, ErrUnknownField, "not a TracSum/PCoA field")
		default:
			return Instance{}, problemf("", ErrMalformedJSON, "%v", err)
		}
	}
	if dec.More() {
		return Instance{}, problemf("", ErrMalformedJSON, "more than one JSON value on the line")
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{{"PMID", raw.PMID == nil}, {"Document", raw.Document == nil}, {"Aspect", raw.Aspect == nil},
		{"Summary", raw.Summary == nil}, {"Indexes", raw.Indexes == nil}} {
		if f.missing {
			return Instance{}, problemf(f.name, ErrMissingField, "required")
		}
	}
	in := Instance{PMID: *raw.PMID, Document: *raw.Document, Aspect: *raw.Aspect, Summary: *raw.Summary, Indexes: *raw.Indexes}
	if raw.Revise != nil {
		in.Revise = *raw.Revise
	}
	if raw.Phrases != nil {
		in.Phrases = *raw.Phrases
	}
	if raw.Sentences != nil {
		in.Sentences = *raw.Sentences
	}
	return in, nil
}

// checkCitations checks a record's citations against its document and its summary: indexes in
// range and distinct, a summary that agrees with having citations or none (the negative written
// the canonical way), and Sentences, when given, the cited sentences themselves.
func checkCitations(in *Instance) *recordProblem {
	seenIdx := make(map[int]bool, len(in.Indexes))
	for i, idx := range in.Indexes {
		if idx < 0 || idx >= len(in.Document) {
			return problemf(fmt.Sprintf("Indexes[%d]", i), ErrIndexRange, "%d not in [0, %d)", idx, len(in.Document))
		}
		if seenIdx[idx] {
			return problemf(fmt.Sprintf("Indexes[%d]", i), ErrDuplicateIndex, "%d cited twice", idx)
		}
		seenIdx[idx] = true
	}
	if !NegativeConsistent(in.Summary, in.Indexes) {
		if len(in.Indexes) > 0 {
			return problemf("Summary", ErrNegativeSummary, "%q with %d cited sentences", strings.TrimSpace(in.Summary), len(in.Indexes))
		}
		return problemf("Indexes", ErrNegativeSummary, "no cited sentences but the summary is not %q", UnknownSummary)
	}
	// A benchmark file spells the negative summary one way, so that shards and references carry
	// the canonical text.
	if len(in.Indexes) == 0 && strings.TrimSpace(in.Summary) != UnknownSummary {
		return problemf("Summary", ErrNegativeSummary, "a negative instance's summary is written %q, not %q", UnknownSummary, in.Summary)
	}
	if in.Sentences != nil {
		if len(in.Sentences) != len(in.Indexes) {
			return problemf("Sentences", ErrSentencesMismatch, "%d sentences for %d indexes", len(in.Sentences), len(in.Indexes))
		}
		for i, s := range in.Sentences {
			if s != in.Document[in.Indexes[i]] {
				return problemf(fmt.Sprintf("Sentences[%d]", i), ErrSentencesMismatch, "differs from Document[%d]", in.Indexes[i])
			}
		}
	}
	return nil
}

// Check runs the checks of a record against the records checked before it (duplicate
// (PMID, aspect), same PMID with another document) and remembers it. in must come from
// ParseRecord.
func (v *Validator) Check(file string, line int, in *Instance) error {
	fail := func(field string, err error, format string, args ...any) error {
		return &ValidationError{File: file, Line: line, Field: field, Err: err, Msg: fmt.Sprintf(format, args...)}
	}
	pos := position{file: v.fileIndex(file), line: int32(line)}
	h := docHash(in.Document)
	if prev, ok := v.docs[in.PMID]; ok && prev.hash != h {
		return fail("Document", ErrConflictingDoc, "PMID %s already seen with another Document at %s", in.PMID, v.where(prev.pos))
	}
	key := keyHash(in.PMID, in.Aspect)
	if prev, ok := v.seenKey[key]; ok {
		return fail("Aspect", ErrDuplicate, "(%s, %s) already seen at %s", in.PMID, in.Aspect, v.where(prev))
	}
	if _, ok := v.docs[in.PMID]; !ok {
		v.docs[in.PMID] = docSeen{hash: h, pos: pos}
	}
	v.seenKey[key] = pos
	return nil
}

func jsonTypeName(goType string) string {
	switch goType {
	case "string":
		return "a string"
	case "[]string":
		return "an array of strings"
	case "int":
		return "an integer"
	case "bool":
		return "a boolean"
	}
	return goType
}

// longestWord returns the length in bytes of the longest run of s without an ASCII space.
func longestWord(s string) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest
}

// docHash identifies a document by its sentences (boundaries included).
func docHash(doc []string) uint64 {
	h := fnv.New64a()
	for _, s := range doc {
		io.WriteString(h, s)
		h.Write([]byte{0})
	}
	return h.Sum64()
}

func keyHash(pmid, aspect string) uint64 {
	h := fnv.New64a()
	io.WriteString(h, pmid)
	h.Write([]byte{0})
	io.WriteString(h, aspect)
	return h.Sum64()
}

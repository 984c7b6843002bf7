package dataset

import (
	"errors"
	"fmt"
)

// Sentinel errors of input validation, wrapped by a *ValidationError that names file, line and
// field. Check them with errors.Is.
var (
	ErrMalformedJSON     = errors.New("malformed JSON")
	ErrMissingField      = errors.New("missing field")
	ErrFieldType         = errors.New("wrong field type")
	ErrUnknownField      = errors.New("unknown field")
	ErrIndexRange        = errors.New("index out of range")
	ErrDuplicateIndex    = errors.New("duplicate index")
	ErrSentencesMismatch = errors.New("Sentences != Document[Indexes]")
	ErrUnknownAspect     = errors.New("unknown aspect")
	ErrDuplicate         = errors.New("duplicate (PMID, aspect)")
	ErrConflictingDoc    = errors.New("same PMID with a different Document")
	ErrEmptyDocument     = errors.New("empty document")
	ErrEmptyField        = errors.New("empty value")
	ErrNegativeSummary   = errors.New("summary does not match citations")
)

// ErrInput marks an input path that ReadInput cannot use: missing, or a prepared split without
// instances.
var ErrInput = errors.New("bad input")

// ErrMalformedRecord marks a prediction or reference record (ReadRecords) that is not valid JSON of
// the expected shape; the error names the file and line.
var ErrMalformedRecord = errors.New("malformed record")

// ErrSchemaVersion is returned by ReadManifest for a manifest written by another shard schema.
var ErrSchemaVersion = errors.New("unsupported shard schema version")

// ValidationError locates a problem in an input file. Its message is one line:
// "FILE:LINE: FIELD: problem".
type ValidationError struct {
	File  string
	Line  int
	Field string // JSON field, e.g. "Indexes[2]"; empty when the whole record is at fault
	Err   error  // a sentinel above, possibly wrapped with details
	Msg   string // details
}

// Error formats the problem as one line: "FILE:LINE: FIELD: sentinel: details".
func (e *ValidationError) Error() string {
	where := fmt.Sprintf("%s:%d", e.File, e.Line)
	if e.Field != "" {
		where += ": " + e.Field
	}
	if e.Msg == "" {
		return fmt.Sprintf("%s: %v", where, e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", where, e.Err, e.Msg)
}

// Unwrap returns the sentinel error.
func (e *ValidationError) Unwrap() error { return e.Err }

package atomicio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
)

// MaxJSONBytes is the size limit of a JSON file read by ReadJSON unless JSONOptions.MaxBytes says
// otherwise: far above any metadata, report or config tracksum reads (kilobytes to a few megabytes)
// and a lexical tracker's weights (7 MB on the TracSum training set), yet small enough that a
// mistaken or hostile multi-gigabyte file is a one-line error instead of an out-of-memory kill
// (decoding takes several times the file's size).
const MaxJSONBytes int64 = 64 << 20

// MaxTokenizerJSONBytes is the size limit of a tokenizer.json, the one kind of JSON file that
// legitimately nears MaxJSONBytes: the vocabularies of multilingual models keep growing (Gemma 3's
// file is 33 MB), and a tokenizer is read once per run. Every reader of one passes it.
const MaxTokenizerJSONBytes int64 = 256 << 20

// MaxJSONLLine is the length limit of one line of a JSON Lines file (ReadLines, ReadJSONL) unless
// the caller passes another: a benchmark record, a prediction or a metrics row is kilobytes; a
// file without line breaks (not JSON Lines at all) stops there instead of filling memory.
const MaxJSONLLine = 16 << 20

// ErrTooLarge reports a file or a line over its size limit (MaxJSONBytes, MaxJSONLLine or the
// caller's own).
var ErrTooLarge = errors.New("too large")

// JSONOptions tune ReadJSONWith.
type JSONOptions struct {
	// Strict makes a field the destination does not have an error: metadata a newer build wrote
	// must not be half-read.
	Strict bool
	// MaxBytes is the size limit of the file; 0 is MaxJSONBytes.
	MaxBytes int64
}

// ReadJSON is ReadJSONWith(path, v, JSONOptions{Strict: strict}).
func ReadJSON(path string, v any, strict bool) error {
	return ReadJSONWith(path, v, JSONOptions{Strict: strict})
}

// ReadJSONWith decodes the JSON file at path into v: the one reader of whole JSON files, ours
// (checkpoint metadata, manifests, reports) and others' (Hugging Face configs, tokenizer.json).
// The file must be a regular file within the size limit and hold exactly one JSON value. A missing
// or unreadable file is the *fs.PathError of the read; every other error starts with the path,
// and with line:column where the JSON went wrong (see DecodeJSON).
func ReadJSONWith(path string, v any, o JSONOptions) error {
	limit := o.MaxBytes
	if limit <= 0 {
		limit = MaxJSONBytes
	}
	b, err := ReadFileMax(path, limit)
	if err != nil {
		return err
	}
	return DecodeJSON(path, b, v, o.Strict)
}

// ReadFileMax is ReadFile bounded to limit bytes: a larger file is an error wrapping ErrTooLarge,
// found before it is read when its size is known. It is the read half of ReadJSONWith, for callers
// that need the bytes themselves (a digest, a patched tokenizer.json) before DecodeJSON.
func ReadFileMax(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, kind(fi.Mode()))
	}
	if fi.Size() > limit {
		return nil, tooLarge(path, fi.Size(), limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read one byte past the limit: a file that grew since the Stat is still caught.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, int64(len(b)), limit)
	}
	return b, nil
}

func tooLarge(path string, size, limit int64) error {
	if size > limit+1 {
		return fmt.Errorf("%s: %d bytes, over the %s limit of this file: %w (not the file meant?)", path, size, byteSize(limit), ErrTooLarge)
	}
	// Read up to the limit only: the real size is unknown.
	return fmt.Errorf("%s: over the %s limit of this file: %w (not the file meant?)", path, byteSize(limit), ErrTooLarge)
}

// byteSize writes n bytes in the largest binary unit that divides it, else in bytes.
func byteSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// DecodeJSON decodes data, the content of the file name, into v, as ReadJSONWith does: exactly
// one JSON value (whitespace around it allowed); with strict, a field v does not have is an error.
// Errors start with name and, for a syntax or type error, the line and column (1-based, columns in
// bytes) where the decoder found it, "NAME:LINE:COL: ..." (for a type error, the end of the
// offending value); a type error names the field by its JSON path. The decoder's
// error stays wrapped (errors.As finds a *json.SyntaxError or *json.UnmarshalTypeError). Parsing a
// sub-document already in memory (a json.RawMessage) is plain json.Unmarshal: it has no file.
func DecodeJSON(name string, data []byte, v any, strict bool) error {
	if err := decodeValue(data, v, strict); err != nil {
		return jsonError(name, data, 0, err)
	}
	return nil
}

// errTrailing reports data after the JSON value of a file or line.
var errTrailing = errors.New("data after the JSON value")

// errEmpty reports a file or line with no JSON value.
var errEmpty = errors.New("no JSON value (empty)")

// truncated reports a JSON value cut short. It wraps io.ErrUnexpectedEOF, the decoder's error,
// in the words of json.Unmarshal.
type truncated struct{}

func (truncated) Error() string { return "unexpected end of JSON input (truncated?)" }
func (truncated) Unwrap() error { return io.ErrUnexpectedEOF }

// positioned is an error found at a byte offset of the input.
type positioned struct {
	off int64
	err error
}

func (p *positioned) Error() string { return p.err.Error() }
func (p *positioned) Unwrap() error { return p.err }

// decodeValue decodes the one JSON value of data into v. Errors it can place are *positioned.
func decodeValue(data []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return errEmpty
		case errors.Is(err, io.ErrUnexpectedEOF):
			return &positioned{int64(len(data)), truncated{}}
		case errors.As(err, &se):
			return &positioned{se.Offset - 1, err}
		case errors.As(err, &te):
			return &positioned{te.Offset - 1, &fieldError{te}}
		}
		return err
	}
	// json.Unmarshal refuses what follows the value; the Decoder would leave it unread.
	off := dec.InputOffset()
	rest := data[off:]
	if trimmed := bytes.TrimLeft(rest, " \t\r\n"); len(trimmed) > 0 {
		return &positioned{off + int64(len(rest)-len(trimmed)), errTrailing}
	}
	return nil
}

// fieldError words a *json.UnmarshalTypeError by the field's JSON path ("model.vocab") rather than
// the decoder's Go names.
type fieldError struct{ te *json.UnmarshalTypeError }

func (e *fieldError) Error() string {
	if e.te.Field == "" {
		return fmt.Sprintf("cannot unmarshal %s into %s", e.te.Value, e.te.Type)
	}
	return fmt.Sprintf("field %s: cannot unmarshal %s into %s", e.te.Field, e.te.Value, e.te.Type)
}

func (e *fieldError) Unwrap() error { return e.te }

// jsonError prefixes err with name and, when it has a position in data, line:col. first is the
// line of the file that data starts (a JSON Lines record), or 0 for a whole file.
func jsonError(name string, data []byte, first int, err error) error {
	var p *positioned
	switch {
	case errors.As(err, &p):
		line, col := lineCol(data, p.off)
		return fmt.Errorf("%s:%d:%d: %w", name, max(first, 1)+line-1, col, p.err)
	case first > 0:
		return fmt.Errorf("%s:%d: %w", name, first, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// lineCol returns the 1-based line and byte column of offset off in data.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// Line is one non-blank line of a JSON Lines file.
type Line struct {
	File string // the name the reader was given
	Num  int    // 1-based
	// Data is the line as read, its line ending included (a last line may have none: a torn
	// write of a killed writer). Each line has its own slice, kept by the caller at will.
	Data []byte
}

// Lines is ReadLines on the file at path. Unlike ReadJSON it reads a named pipe too (a shell's
// <(zcat ...)): lines are bounded, the whole stream need not fit in memory.
func Lines(path string, maxLine int) iter.Seq2[Line, error] {
	return func(yield func(Line, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield(Line{}, err)
			return
		}
		defer f.Close()
		for l, err := range ReadLines(f, path, maxLine) {
			if !yield(l, err) {
				return
			}
		}
	}
}

// ReadLines is the one line reader of JSON Lines inputs (benchmark files, predictions,
// references, metrics.jsonl): it yields the non-blank lines of r with their 1-based numbers, a
// UTF-8 byte-order mark at the start removed (editors on Windows write one; json would fail on it
// with "invalid character 'ï'"). A line longer than maxLine bytes (0: MaxJSONLLine), its line
// ending aside, ends the reading with an error wrapping ErrTooLarge. Errors are "NAME:LINE: ...".
func ReadLines(r io.Reader, name string, maxLine int) iter.Seq2[Line, error] {
	if maxLine <= 0 {
		maxLine = MaxJSONLLine
	}
	return func(yield func(Line, error) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		for num := 1; ; num++ {
			var b []byte
			var err error
			for {
				var chunk []byte
				chunk, err = br.ReadSlice('\n')
				b = append(b, chunk...)
				if !errors.Is(err, bufio.ErrBufferFull) {
					break
				}
				if len(b) > maxLine+2 { // "\r\n" aside: over the limit whatever follows
					break
				}
			}
			if content := len(bytes.TrimRight(b, "\r\n")); content > maxLine || errors.Is(err, bufio.ErrBufferFull) {
				yield(Line{}, fmt.Errorf("%s:%d: line longer than %s: %w (not JSON Lines?)", name, num, byteSize(int64(maxLine)), ErrTooLarge))
				return
			}
			if err != nil && err != io.EOF {
				yield(Line{}, fmt.Errorf("%s:%d: read: %w", name, num, err))
				return
			}
			if num == 1 {
				b = bytes.TrimPrefix(b, []byte("\ufeff"))
			}
			if len(bytes.TrimSpace(b)) > 0 {
				if !yield(Line{File: name, Num: num, Data: b}, nil) {
					return
				}
			}
			if err == io.EOF {
				return
			}
		}
	}
}

// JSONLOptions tune ReadJSONL.
type JSONLOptions struct {
	// Strict makes a field the record type does not have an error.
	Strict bool
	// MaxLine is the length limit of a line; 0 is MaxJSONLLine.
	MaxLine int
	// DropTorn skips a last line without its line ending, the torn row of a writer killed
	// mid-line (an append-only log such as metrics.jsonl), instead of decoding it.
	DropTorn bool
}

// ReadJSONL is the one JSON Lines reader: it decodes each non-blank line of the file at path (see
// ReadLines) into a new T and calls fn with it and its 1-based line number, stopping at the first
// error. A line that does not decode is an error "PATH:LINE:COL: ..." (as DecodeJSON words it);
// an error of fn is prefixed with "PATH:LINE: ". A missing file is the *fs.PathError of the open.
func ReadJSONL[T any](path string, o JSONLOptions, fn func(line int, rec T) error) error {
	for l, err := range Lines(path, o.MaxLine) {
		if err != nil {
			return err
		}
		if o.DropTorn && !bytes.HasSuffix(l.Data, []byte("\n")) {
			return nil // the last line: ReadLines ends at a line without its ending
		}
		var rec T
		if err := decodeValue(l.Data, &rec, o.Strict); err != nil {
			return jsonError(path, l.Data, l.Num, err)
		}
		if err := fn(l.Num, rec); err != nil {
			return fmt.Errorf("%s:%d: %w", path, l.Num, err)
		}
	}
	return nil
}

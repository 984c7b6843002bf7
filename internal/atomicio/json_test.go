package atomicio

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type jsonDoc struct {
	Name  string `json:"name"`
	Steps int    `json:"steps"`
	Model struct {
		Vocab map[string]int `json:"vocab"`
	} `json:"model"`
}

func TestReadJSON(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		desc    string
		content string // "" with missing: no file
		missing bool
		o       JSONOptions
		want    string  // error substrings after the path; none: success
		wantAs  []any   // error types errors.As must find
		wantIs  []error // sentinels errors.Is must find
		check   func(jsonDoc) bool
	}{
		{desc: "valid", content: "{\"name\": \"a\", \"steps\": 3}\n",
			check: func(d jsonDoc) bool { return d.Name == "a" && d.Steps == 3 }},
		{desc: "unknown field lax", content: `{"name": "a", "extra": 1}`,
			check: func(d jsonDoc) bool { return d.Name == "a" }},
		{desc: "unknown field strict", content: `{"name": "a", "extra": 1}`, o: JSONOptions{Strict: true},
			want: `: json: unknown field "extra"`},
		{desc: "syntax error with line:col", content: "{\n  \"name\": \"a\",\n  \"steps\": 3,\n}\n",
			want: ":4:1: invalid character '}' looking for beginning of object key string", wantAs: []any{new(*json.SyntaxError)}},
		{desc: "type error names the field", content: "{\n  \"model\": {\"vocab\": {\"a\": \"x\"}}\n}",
			want: `:2:30: field model.vocab: cannot unmarshal string into int`, wantAs: []any{new(*json.UnmarshalTypeError)}},
		{desc: "type error of the top value", content: `[1, 2]`,
			want: `:1:1: cannot unmarshal array into atomicio.jsonDoc`, wantAs: []any{new(*json.UnmarshalTypeError)}},
		{desc: "empty file", content: "", want: ": no JSON value (empty)"},
		{desc: "blank file", content: " \n\n", want: ": no JSON value (empty)"},
		{desc: "truncated", content: "{\"name\":\n\"a\"", want: ":2:4: unexpected end of JSON input (truncated?)", wantIs: []error{io.ErrUnexpectedEOF}},
		{desc: "data after the value", content: "{\"name\": \"a\"}\n {}", want: ":2:2: data after the JSON value"},
		{desc: "too large", content: `{"name": "abcdefghijklmnopqrstuvwxyz"}`, o: JSONOptions{MaxBytes: 16},
			want: ": 38 bytes, over the 16 bytes limit of this file: too large", wantIs: []error{ErrTooLarge}},
		{desc: "exactly the limit", content: `{"name": "abcd"}`, o: JSONOptions{MaxBytes: 16},
			check: func(d jsonDoc) bool { return d.Name == "abcd" }},
		{desc: "missing file", missing: true, want: "no such file or directory",
			wantIs: []error{fs.ErrNotExist}, wantAs: []any{new(*fs.PathError)}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.desc, " ", "_")+".json")
			if !tc.missing {
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var d jsonDoc
			err := ReadJSONWith(path, &d, tc.o)
			if tc.want == "" {
				if err != nil || !tc.check(d) {
					t.Fatalf("got %+v, %v", d, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %+v, want an error %q", d, tc.want)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want the path and %q", err, tc.want)
			}
			if !tc.missing && !strings.HasPrefix(err.Error(), path+tc.want) {
				t.Errorf("error %q, want exactly %q", err, path+tc.want)
			}
			for _, target := range tc.wantAs {
				if !errors.As(err, target) {
					t.Errorf("error %q: errors.As %T false", err, target)
				}
			}
			for _, target := range tc.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("error %q: errors.Is %v false", err, target)
				}
			}
		})
	}
}

func TestReadJSONRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	err := ReadJSON(dir, &jsonDoc{}, false)
	if err == nil || !strings.Contains(err.Error(), dir+": not a regular file (directory)") {
		t.Errorf("got %v, want a refusal naming the directory", err)
	}
}

func TestTooLargeFoundBeforeReading(t *testing.T) {
	// A sparse 3 GiB file: refused on its size, without reading (or allocating) it.
	path := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil {
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	err = ReadJSON(path, &jsonDoc{}, false)
	if want := path + ": 3221225472 bytes, over the 64 MiB limit of this file"; err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, ErrTooLarge) {
		t.Errorf("got %v, want %q", err, want)
	}
}

type row struct {
	Step *int   `json:"step"`
	Loss string `json:"loss"`
}

func TestReadJSONL(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		desc    string
		content string
		o       JSONLOptions
		fnErr   int // the line fn fails on
		want    string
		lines   []int // the lines fn saw
	}{
		{desc: "rows, blank lines and a BOM", content: "\ufeff{\"step\": 1}\n\n{\"step\": 2}\r\n  \n{\"step\": 3}", lines: []int{1, 3, 5}},
		{desc: "bad line N", content: "{\"step\": 1}\n{\"step\": 2}\n{\"step\": 3,}\n",
			want: ":3:12: invalid character '}' looking for beginning of object key string", lines: []int{1, 2}},
		{desc: "type error on line N", content: "{\"step\": 1}\n\n{\"step\": \"x\"}\n",
			want: ":3:12: field step: cannot unmarshal string into int", lines: []int{1}},
		{desc: "two values on a line", content: "{\"step\": 1} {\"step\": 2}\n", want: ":1:13: data after the JSON value"},
		{desc: "unknown field strict", content: "{\"step\": 1, \"x\": 2}\n", o: JSONLOptions{Strict: true}, want: `:1: json: unknown field "x"`},
		{desc: "unknown field lax", content: "{\"step\": 1, \"x\": 2}\n", lines: []int{1}},
		{desc: "overlong line", content: "{\"step\": 1}\n{\"loss\": \"" + strings.Repeat("x", 100) + "\"}\n{\"step\": 3}\n",
			o: JSONLOptions{MaxLine: 64}, want: ":2: line longer than 64 bytes: too large", lines: []int{1}},
		{desc: "line at the limit", content: "{\"loss\": \"" + strings.Repeat("x", 52) + "\"}\r\n", o: JSONLOptions{MaxLine: 64}, lines: []int{1}},
		{desc: "torn last line kept", content: "{\"step\": 1}\n{\"step\": 2}\n{\"st", want: ":3:5: unexpected end of JSON input (truncated?)", lines: []int{1, 2}},
		{desc: "torn last line dropped", content: "{\"step\": 1}\n{\"step\": 2}\n{\"st", o: JSONLOptions{DropTorn: true}, lines: []int{1, 2}},
		{desc: "fn error named by line", content: "{\"step\": 1}\n{\"step\": 2}\n", fnErr: 2, want: ":2: no good", lines: []int{1, 2}},
		{desc: "empty file", content: ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.desc, " ", "_")+".jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var lines []int
			err := ReadJSONL(path, tc.o, func(line int, r row) error {
				lines = append(lines, line)
				if line == tc.fnErr {
					return errors.New("no good")
				}
				return nil
			})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), path+tc.want)) {
				t.Errorf("error %v, want %q", err, path+tc.want)
			}
			if !slices.Equal(lines, tc.lines) {
				t.Errorf("lines %v, want %v", lines, tc.lines)
			}
		})
	}
}

func TestReadJSONLMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	err := ReadJSONL(path, JSONLOptions{}, func(int, row) error { return nil })
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v, want a not-exist error naming %s", err, path)
	}
}

func TestReadLinesKeepsBytes(t *testing.T) {
	content := "{\"a\": 1}\r\n\n{\"b\": 2}"
	var got []string
	for l, err := range ReadLines(strings.NewReader(content), "in.jsonl", 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.File+":"+string(rune('0'+l.Num))+":"+string(l.Data))
	}
	want := []string{"in.jsonl:1:{\"a\": 1}\r\n", "in.jsonl:3:{\"b\": 2}"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

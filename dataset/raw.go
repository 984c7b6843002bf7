package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"
)

// Abstract is a raw abstract split into sentences, for inference on text that has no annotation.
type Abstract struct {
	// PMID identifies the abstract: the file name without extension, plus "-N" (1-based paragraph
	// number) when the file holds several abstracts.
	PMID     string
	Document []string
	// Source is "FILE" or "FILE:LINE" (first line of the paragraph), for error messages.
	Source string
}

// ReadRaw reads plain-text abstracts from a file: one abstract per file, or several separated by
// blank lines. Each is split into sentences with SplitSentences. An abstract that yields no
// sentence is skipped; a file without any abstract is an error. When path is a directory, every
// regular file in it whose name does not start with "." is read that way, in name order.
func ReadRaw(path string) ([]Abstract, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read raw abstracts: %w", err)
	}
	if !st.IsDir() {
		return readRawFile(path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("read raw abstracts: %w", err)
	}
	var out []Abstract
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		abs, err := readRawFile(filepath.Join(path, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, abs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w: no text files", path, ErrEmptyDocument)
	}
	return out, nil
}

// ErrBinary marks a raw-text input that is not text (NUL bytes, or mostly control bytes and
// invalid UTF-8): a PDF, an image or a compressed file given by mistake.
var ErrBinary = errors.New("binary file, not text")

// Warnings receives one line per problem in an input that is accepted but changes its text
// ("FILE:LINE: warning: ..."): invalid UTF-8 dropped or replaced, words over MaxWordBytes broken.
// It is os.Stderr unless a caller (a test, a library user) redirects it before reading.
var Warnings io.Writer = os.Stderr

var warnMu sync.Mutex

// warnf writes one warning line to Warnings; safe for concurrent use.
func warnf(format string, args ...any) {
	warnMu.Lock()
	defer warnMu.Unlock()
	fmt.Fprintf(Warnings, "warning: "+format+"\n", args...)
}

// maxLineWarnings bounds the warnings of one kind per file: a wholly mis-encoded file says so a
// few times, then counts the rest.
const maxLineWarnings = 5

// checkText refuses binary content and warns, with file:line, about lines of invalid UTF-8 (which
// CleanText drops).
func checkText(path string, b []byte) error {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return fmt.Errorf("%s: %w (NUL byte at offset %d)", path, ErrBinary, i)
	}
	head := b[:min(len(b), 64<<10)]
	bad := 0
	for i := 0; i < len(head); {
		r, size := utf8.DecodeRune(head[i:])
		if (r == utf8.RuneError && size <= 1 && i+utf8.UTFMax <= len(head)) ||
			(r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f') || r == 0x7f {
			bad += size
		}
		i += size
	}
	// Legacy-encoded text (Latin-1 accents) has a few invalid bytes; binary data is mostly them.
	if len(head) >= 16 && bad*10 > len(head) {
		return fmt.Errorf("%s: %w (%d of the first %d bytes are control bytes or invalid UTF-8)", path, ErrBinary, bad, len(head))
	}
	invalid := 0
	for num, line := range bytes.Split(b, []byte{'\n'}) {
		if utf8.Valid(line) {
			continue
		}
		if invalid++; invalid <= maxLineWarnings {
			warnf("%s:%d: invalid UTF-8 (not UTF-8 text?): the undecodable bytes are dropped", path, num+1)
		}
	}
	if invalid > maxLineWarnings {
		warnf("%s: %d more lines with invalid UTF-8", path, invalid-maxLineWarnings)
	}
	return nil
}

func readRawFile(path string) ([]Abstract, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read raw abstracts: %w", err)
	}
	if err := checkText(path, b); err != nil {
		return nil, err
	}
	text := CleanTextKeepLines(string(b))
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	type para struct {
		text string
		line int
	}
	var paras []para
	var cur []string
	first := 0
	for i, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" {
			if len(cur) > 0 {
				paras = append(paras, para{strings.Join(cur, " "), first})
				cur = nil
			}
			continue
		}
		if len(cur) == 0 {
			first = i + 1
		}
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		paras = append(paras, para{strings.Join(cur, " "), first})
	}
	var out []Abstract
	for k, p := range paras {
		doc, broken := splitSentences(p.text)
		if broken > 0 {
			warnf("%s:%d: %d word(s) longer than %d bytes broken into pieces", path, p.line, broken, MaxWordBytes)
		}
		if len(doc) == 0 {
			continue
		}
		a := Abstract{PMID: base, Document: doc, Source: path}
		if len(paras) > 1 {
			a.PMID = fmt.Sprintf("%s-%d", base, k+1)
			a.Source = fmt.Sprintf("%s:%d", path, p.line)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w: no text", path, ErrEmptyDocument)
	}
	return out, nil
}

// CleanTextKeepLines is CleanText that keeps line breaks, for inputs whose blank lines matter.
func CleanTextKeepLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = CleanText(strings.TrimSuffix(l, "\r"))
	}
	return strings.Join(lines, "\n")
}

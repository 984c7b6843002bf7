package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

func readRawFile(path string) ([]Abstract, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read raw abstracts: %w", err)
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
		doc := SplitSentences(p.text)
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

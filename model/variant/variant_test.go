package variant

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/model/checkpoint"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if content != "" {
			if err := os.WriteFile(filepath.Join(d, checkpoint.VariantFile), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	good := filepath.Join(dir, "good")
	if err := os.MkdirAll(good, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(good, Meta{Variant: SumThenTrack, Part: "tracker", AspectSet: "tracsum"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc, dir, want, part string
		err                   string // "" = accepted
	}{
		{"written", good, SumThenTrack, "tracker", ""},
		{"any part", good, SumThenTrack, "", ""},
		{"other part", good, SumThenTrack, "summarizer", `is the "tracker" part`},
		{"other variant", good, EndToEnd, "", `is a "sum_then_track" checkpoint, not "end_to_end"`},
		{"missing", write("missing", ""), EndToEnd, "", "has no variant.json"},
		{"version", write("version", `{"format_version": 9, "variant": "end_to_end"}`), EndToEnd, "", "format version 9"},
		{"unknown field", write("field", `{"format_version": 1, "variant": "end_to_end", "x": 1}`), EndToEnd, "", "unknown field"},
		{"not json", write("json", `{`), EndToEnd, "", "variant.json"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			m, err := Read(tc.dir, tc.want, tc.part)
			switch {
			case tc.err == "" && (err != nil || m.AspectSet != "tracsum"):
				t.Errorf("Read = %+v, %v", m, err)
			case tc.err != "" && (!errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("Read: err = %v, want ErrCheckpoint with %q", err, tc.err)
			}
		})
	}
}

func TestReadKind(t *testing.T) {
	dir := t.TempDir()
	scratch, llm := filepath.Join(dir, "scratch"), filepath.Join(dir, "llm")
	for _, d := range []string{scratch, llm} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(scratch, Meta{Variant: EndToEnd, AspectSet: "tracsum"}); err != nil {
		t.Fatal(err)
	}
	if err := Write(llm, Meta{Variant: EndToEnd, AspectSet: "tracsum", Pretrained: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc       string
		dir        string
		pretrained bool
		err        string // "" = accepted
	}{
		{"from-scratch as from-scratch", scratch, false, ""},
		{"pretrained as pretrained", llm, true, ""},
		{"pretrained as from-scratch", llm, false, "of a fine-tuned pretrained LM"},
		{"from-scratch as pretrained", scratch, true, "load it with package ete"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			m, err := ReadKind(tc.dir, EndToEnd, "", tc.pretrained)
			switch {
			case tc.err == "" && (err != nil || m.Pretrained != tc.pretrained):
				t.Errorf("ReadKind = %+v, %v", m, err)
			case tc.err != "" && (!errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("ReadKind: err = %v, want ErrCheckpoint with %q", err, tc.err)
			}
		})
	}
}

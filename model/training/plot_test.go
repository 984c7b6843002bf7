package training

import (
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWritePlot: curves.png decodes at 900 x 900 pixels and curves.svg parses as XML; the SVG's
// texts carry the chart's structure (panel titles, the axis label, the legend in order with the
// selection metric first, the best-step mark), whatever the pixels.
func TestWritePlot(t *testing.T) {
	const metrics = `{"split":"train","step":10,"epoch":1,"loss":0.9,"lr":0.0003,"examples_per_sec":50}
{"split":"dev","step":10,"epoch":1,"loss":0.8,"accuracy":0.6,"f1":0.4,"eval_seconds":3.5,"count":120}
{"split":"train","step":20,"epoch":1,"loss":0.5,"lr":0.0002,"examples_per_sec":55}
{"split":"dev","step":20,"epoch":1,"loss":0.7,"accuracy":0.7,"f1":0.5,"eval_seconds":3.4,"count":120}
`
	for _, tc := range []struct {
		desc     string
		metrics  string
		best     int
		want     []string // texts of the SVG, in this order
		wantNone []string // texts it must not hold
	}{
		{"loss, metrics and rate", metrics, 20,
			[]string{"loss", "step", "train loss", "dev loss", "best 20", "dev metrics", "dev f1", "dev accuracy", "learning rate", "train lr"},
			[]string{"dev eval_seconds", "train examples_per_sec", "dev count", "train epoch"}},
		{"no best step", metrics, -1, []string{"train loss"}, []string{"best -1"}},
		{"train rows only: empty panels still drawn", `{"split":"train","step":1,"loss":2}` + "\n", 1,
			[]string{"loss", "train loss", "best 1", "dev metrics", "learning rate"}, []string{"dev loss"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, MetricsFile)
			if err := os.WriteFile(in, []byte(tc.metrics), 0o644); err != nil {
				t.Fatal(err)
			}
			pngPath, svgPath := filepath.Join(dir, PlotFile), filepath.Join(dir, PlotSVGFile)
			if err := WritePlot(in, pngPath, svgPath, "f1", tc.best); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(pngPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("%s: %v", PlotFile, err)
			}
			if b := img.Bounds(); b.Dx() != 900 || b.Dy() != 900 {
				t.Errorf("%s is %dx%d, want 900x900", PlotFile, b.Dx(), b.Dy())
			}
			texts := svgTexts(t, svgPath)
			pos := -1
			for _, w := range tc.want {
				i := slices.Index(texts[pos+1:], w)
				if i < 0 {
					t.Fatalf("%s: no %q after position %d in %q", PlotSVGFile, w, pos, texts)
				}
				pos += 1 + i
			}
			for _, w := range tc.wantNone {
				if slices.Contains(texts, w) {
					t.Errorf("%s holds %q: %q", PlotSVGFile, w, texts)
				}
			}
		})
	}
}

// TestWritePlotErrors: a metrics file that cannot be read is an error naming it, and no chart is
// written.
func TestWritePlotErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, MetricsFile)
	if err := os.WriteFile(bad, []byte("{\"split\":\"train\"\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ desc, path string }{
		{"missing", filepath.Join(dir, "none.jsonl")},
		{"malformed", bad},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pngPath, svgPath := filepath.Join(dir, PlotFile), filepath.Join(dir, PlotSVGFile)
			err := WritePlot(tc.path, pngPath, svgPath, "f1", 1)
			if err == nil || !strings.Contains(err.Error(), filepath.Base(tc.path)) {
				t.Fatalf("WritePlot(%s) = %v, want an error naming the file", tc.path, err)
			}
			for _, p := range []string{pngPath, svgPath} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s written (%v)", p, err)
				}
			}
		})
	}
}

// svgTexts parses an SVG file and returns the contents of its <text> elements in document order.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var texts []string
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = start.Name.Local
		}
		if start.Name.Local == "text" {
			var s string
			if err := dec.DecodeElement(&s, &start); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			texts = append(texts, s)
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", path, root)
	}
	return texts
}

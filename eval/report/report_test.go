package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func testPage() Page {
	return Page{
		Title:    "test <run>",
		Subtitle: "judge lexical",
		Metrics:  []string{"claim_recall", "citation_f1"},
		Tables: []Table{{ID: "t-claims", Title: "Claims", Columns: []Column{{Head: "R", Metric: "claim_recall"}},
			Rows: []Row{{Name: "all (n=3)", Cells: []Cell{{Value: "50.0", CI: "[20.0, 80.0]"}}}}}},
		Notes: []string{"a note"},
		Figures: []Figure{{ID: "fig-bars", Title: "Bars", Caption: "bars <caption>",
			SVG: BarChart{Title: "bars", Categories: []string{"a"}, Series: []BarSeries{{Name: "s", Values: []float64{0.5}}}}.SVG()}},
		Abstracts: []Abstract{
			{PMID: "1001", Sentences: []string{"First <b>sentence</b>.", "Second & last."}, Cards: []Card{
				{Aspect: "p", RefSummary: "Ref.", PredSummary: "Pred.", Ref: []int{0, 1}, Pred: []int{1}, Valid: []int{1},
					RefClaims:  []Claim{{Text: "Ref.", Entailed: true}},
					PredClaims: []Claim{{Text: "Pred.", Entailed: false}},
					Scores:     []Score{{"claim_recall", 1}, {"citation_f1", 0.5}}, Probs: []float64{0.25, 0.75}},
				{Aspect: "d", RefSummary: "Unknown.", PredSummary: "Unknown.", RefNegative: true, PredNegative: true,
					Scores: []Score{{"claim_recall", 1}, {"citation_f1", 1}}},
			}},
			{PMID: "1002", Sentences: []string{"Only one."}, Cards: []Card{
				{Aspect: "a", RefSummary: "R.", PredSummary: "P.", Ref: []int{0}, Pred: []int{0},
					Scores: []Score{{"claim_recall", 0}, {"citation_f1", 0}}},
			}},
		},
	}
}

type element struct {
	name  string
	attrs map[string]string
}

// parse reads the page as HTML with encoding/xml in its lenient mode and returns its elements.
func parse(t *testing.T, page []byte) []element {
	t.Helper()
	// The XML decoder does not know that script content is raw text: blank it out first.
	if i, k := bytes.Index(page, []byte("<script>")), bytes.LastIndex(page, []byte("</script>")); i >= 0 && k > i {
		page = append(append(append([]byte{}, page[:i+len("<script>")]...), ' '), page[k:]...)
	}
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	var out []element
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("report.html does not parse: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			e := element{name: se.Name.Local, attrs: map[string]string{}}
			for _, a := range se.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
		}
	}
}

func hasClass(e element, c string) bool {
	return strings.Contains(" "+e.attrs["class"]+" ", " "+c+" ")
}

func TestPageStructure(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, testPage()); err != nil {
		t.Fatal(err)
	}
	page := buf.Bytes()
	els := parse(t, page)
	count := func(pred func(element) bool) int {
		n := 0
		for _, e := range els {
			if pred(e) {
				n++
			}
		}
		return n
	}
	if n := count(func(e element) bool { return e.name == "section" && hasClass(e, "abstract") }); n != 2 {
		t.Errorf("%d abstracts, want 2", n)
	}
	if n := count(func(e element) bool { return e.name == "li" && hasClass(e, "sent") }); n != 3 {
		t.Errorf("%d sentences, want 3", n)
	}
	var cards []element
	for _, e := range els {
		if hasClass(e, "card") {
			cards = append(cards, e)
		}
	}
	if len(cards) != 3 {
		t.Fatalf("%d cards, want 3", len(cards))
	}
	if c := cards[0]; c.attrs["data-aspect"] != "p" || c.attrs["data-ref"] != "0 1" || c.attrs["data-pred"] != "1" ||
		c.attrs["data-valid"] != "1" || c.attrs["data-scores"] != "claim_recall:1 citation_f1:0.5" {
		t.Errorf("first card attributes: %v", c.attrs)
	}
	// Filters: an aspect selector with each aspect once (sorted), a metric selector, a range.
	var aspects []string
	inAspect := false
	for _, e := range els {
		if e.name == "select" {
			inAspect = e.attrs["id"] == "f-aspect"
		}
		if inAspect && e.name == "option" {
			aspects = append(aspects, e.attrs["value"])
		}
	}
	if strings.Join(aspects, ",") != ",a,d,p" {
		t.Errorf("aspect filter options %q, want all,a,d,p", aspects)
	}
	for _, id := range []string{"f-metric", "f-min", "f-max", "summary"} {
		if count(func(e element) bool { return e.attrs["id"] == id }) != 1 {
			t.Errorf("no element with id %q", id)
		}
	}
	// Metric tables: a column per metric (its full name kept in data-metric), each value with its
	// interval; charts as inline SVG.
	if count(func(e element) bool { return e.name == "th" && e.attrs["data-metric"] == "claim_recall" }) != 1 ||
		count(func(e element) bool { return e.name == "span" && hasClass(e, "ci") }) != 1 ||
		!bytes.Contains(page, []byte(`<span class="ci">[20.0, 80.0]</span>`)) {
		t.Error("the metric table lacks its column or the interval")
	}
	if count(func(e element) bool { return e.name == "figure" && e.attrs["id"] == "fig-bars" }) != 1 ||
		count(func(e element) bool { return e.name == "svg" && hasClass(e, "chart") }) != 1 {
		t.Error("no inline SVG chart")
	}
	if !bytes.Contains(page, []byte("bars &lt;caption&gt;")) || !bytes.Contains(page, []byte(`<p class="info">a note</p>`)) {
		t.Error("caption or note missing or not escaped")
	}
	// Tracker probabilities: abstract 1001 shows one cell per sentence and card (the card without
	// probabilities as "-"), abstract 1002 (no probabilities) none.
	var cells []string
	for _, e := range els {
		if e.name == "span" && hasClass(e, "tp") && e.attrs["data-aspect"] != "" {
			cells = append(cells, e.attrs["data-aspect"]+":"+e.attrs["class"])
		}
	}
	if want := "p:tp tp2,d:tp none,p:tp tp7 sel,d:tp none"; strings.Join(cells, ",") != want {
		t.Errorf("probability cells %q, want %q", strings.Join(cells, ","), want)
	}
	for _, want := range []string{">0.25</span>", ">0.75</span>", `tracker p: <span class="tp">p</span><span class="tp">d</span>`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q (tracker probabilities)", want)
		}
	}
	// Self-contained: inline style and script only, no external resource.
	for _, e := range els {
		if e.attrs["src"] != "" || e.attrs["href"] != "" || e.name == "link" || e.name == "img" || e.name == "iframe" {
			t.Errorf("external resource: <%s %v>", e.name, e.attrs)
		}
	}
	for _, bad := range []string{"http://", "https://", "@import", "url("} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	for _, want := range []string{"mouseenter", "classList.add(\"spurious\")", "\"missed\"", "\"correct\""} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q (highlighting)", want)
		}
	}
	// Text is escaped.
	if bytes.Contains(page, []byte("<b>sentence</b>")) || !bytes.Contains(page, []byte("&lt;b&gt;sentence")) {
		t.Error("sentence text is not escaped")
	}
	var again bytes.Buffer
	Write(&again, testPage())
	if !bytes.Equal(page, again.Bytes()) {
		t.Error("the same page renders to different bytes")
	}
}

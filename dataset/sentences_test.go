package dataset

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSplitSentences(t *testing.T) {
	for _, tc := range []struct {
		desc string
		text string
		want []string
	}{
		{"two plain sentences", "Pain improved. Sleep did not.", []string{"Pain improved.", "Sleep did not."}},
		{"question and exclamation", "Does it work? Yes! It does.", []string{"Does it work?", "Yes!", "It does."}},
		{"decimal numbers", "The rate was 12.5% at 3.0 months. It fell.", []string{"The rate was 12.5% at 3.0 months.", "It fell."}},
		{"P value without leading zero", "Survival improved (P = .001). Toxicity was low.", []string{"Survival improved (P = .001).", "Toxicity was low."}},
		{"P value ends the sentence", "The effect was significant, P < .001. Adverse events were rare.", []string{"The effect was significant, P < .001.", "Adverse events were rare."}},
		{"vs. before a capital", "Response was 31% vs. 19% with Placebo vs. Drug B. Next sentence.", []string{"Response was 31% vs. 19% with Placebo vs. Drug B.", "Next sentence."}},
		{"et al.", "As reported by Smith et al. The trial was small. It ended.", []string{"As reported by Smith et al. The trial was small.", "It ended."}},
		{"e.g. and i.e.", "Some drugs (e.g. Aspirin) act fast, i.e. Within hours. Others do not.", []string{"Some drugs (e.g. Aspirin) act fast, i.e. Within hours.", "Others do not."}},
		{"95% CI with colon is not a heading", "Median OS was 12.1 months (95% CI: 8.3-15.9). PFS was 2.7 months.", []string{"Median OS was 12.1 months (95% CI: 8.3-15.9).", "PFS was 2.7 months."}},
		{"95% CI at sentence end", "The hazard ratio was 0.73 (95% CI, 0.58 to 0.94). No new signals emerged.", []string{"The hazard ratio was 0.73 (95% CI, 0.58 to 0.94).", "No new signals emerged."}},
		{"section headings stay with their sentence", "BACKGROUND: Melanoma is common. METHODS: We enrolled 40 adults. RESULTS: Pain fell.",
			[]string{"BACKGROUND: Melanoma is common.", "METHODS: We enrolled 40 adults.", "RESULTS: Pain fell."}},
		{"multi-word heading", "DESIGN, SETTING, AND PARTICIPANTS: A phase 3 trial. PATIENTS AND METHODS: Adults were enrolled.",
			[]string{"DESIGN, SETTING, AND PARTICIPANTS: A phase 3 trial.", "PATIENTS AND METHODS: Adults were enrolled."}},
		{"heading without a preceding period", "Patients were enrolled RESULTS: Pain fell.", []string{"Patients were enrolled", "RESULTS: Pain fell."}},
		{"heading with a dotted word", "It ended. CLINICALTRIALS.GOV IDENTIFIER: NCT01234567.", []string{"It ended.", "CLINICALTRIALS.GOV IDENTIFIER: NCT01234567."}},
		{"lower-case after a period", "Doses were 5 mg. once daily were given. Then it stopped.", []string{"Doses were 5 mg. once daily were given.", "Then it stopped."}},
		{"page reference", "See the commentary on p. 599. It is short.", []string{"See the commentary on p. 599.", "It is short."}},
		{"bullets start sentences", "KEY POINTS: • Rates fell. • Survival rose.", []string{"KEY POINTS: • Rates fell.", "• Survival rose."}},
		{"No. before a number", "See trial No. 5 for details. It was large.", []string{"See trial No. 5 for details.", "It was large."}},
		{"dotted initialism", "Approved by the U.S. Food and Drug Administration. It is used widely.", []string{"Approved by the U.S. Food and Drug Administration.", "It is used widely."}},
		{"vitamin D ends a sentence", "Patients received vitamin D. Levels rose.", []string{"Patients received vitamin D.", "Levels rose."}},
		{"closing bracket after the period", "(Funded by Acme.) The trial ended.", []string{"(Funded by Acme.)", "The trial ended."}},
		{"newlines and tabs collapse", "First line\nwraps here.\n\tSecond sentence.", []string{"First line wraps here.", "Second sentence."}},
		{"unicode spaces are kept", "Dose was 3\u00a0mg/kg (P\u2009=\u2009.01). Next.", []string{"Dose was 3\u00a0mg/kg (P\u2009=\u2009.01).", "Next."}},
		{"BOM and control characters removed", "\ufeffPain\x00 improved. Sleep did not.", []string{"Pain improved.", "Sleep did not."}},
		{"empty text", "  \n ", nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := SplitSentences(tc.text)
			if !slices.Equal(got, tc.want) {
				t.Errorf("SplitSentences(%q)\n got %q\nwant %q", tc.text, got, tc.want)
			}
		})
	}
}

// TestSplitSentencesTracSumDev re-splits each benchmark abstract joined with spaces and counts the
// abstracts whose sentences come back exactly. The benchmark's own splitter is not perfect (it
// splits "i.v." and "p. 599", and misses some boundaries), so a few differences are expected.
func TestSplitSentencesTracSumDev(t *testing.T) {
	ins, err := ReadInstances(sharedData(t, "data/tracsum/tracsum-dev.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	same, total := 0, 0
	for _, in := range ins {
		if seen[in.PMID] {
			continue
		}
		seen[in.PMID] = true
		total++
		if slices.Equal(SplitSentences(strings.Join(in.Document, " ")), in.Document) {
			same++
		}
	}
	t.Logf("%d/%d abstracts re-split identically", same, total)
	if float64(same) < 0.9*float64(total) {
		t.Errorf("only %d/%d abstracts re-split identically, want >= 90%%", same, total)
	}
}

func TestReadRaw(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "trial-7.txt")
	if err := os.WriteFile(one, []byte("OBJECTIVE: To test a drug.\nRESULTS: It worked (P = .01).\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	many := filepath.Join(dir, "batch.txt")
	if err := os.WriteFile(many, []byte("First abstract. It has two sentences.\n\n\n  \nSecond abstract\nwraps a line.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc string
		path string
		want []Abstract
	}{
		{"one abstract per file", one, []Abstract{{PMID: "trial-7", Document: []string{"OBJECTIVE: To test a drug.", "RESULTS: It worked (P = .01)."}, Source: one}}},
		{"blank-line separated abstracts", many, []Abstract{
			{PMID: "batch-1", Document: []string{"First abstract.", "It has two sentences."}, Source: many + ":1"},
			{PMID: "batch-2", Document: []string{"Second abstract wraps a line."}, Source: many + ":5"},
		}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ReadRaw(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d abstracts %+v", len(got), got)
			}
			for i := range got {
				if got[i].PMID != tc.want[i].PMID || got[i].Source != tc.want[i].Source || !slices.Equal(got[i].Document, tc.want[i].Document) {
					t.Errorf("abstract %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	// A directory: every file, in name order.
	all, err := ReadRaw(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range all {
		ids = append(ids, a.PMID)
	}
	if want := []string{"batch-1", "batch-2", "trial-7"}; !slices.Equal(ids, want) {
		t.Errorf("directory: PMIDs %v, want %v", ids, want)
	}
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, []byte("\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRaw(empty); err == nil || !strings.Contains(err.Error(), "empty.txt") {
		t.Errorf("empty file: err = %v", err)
	}
}

func TestAspects(t *testing.T) {
	if n := len(Aspects(AspectSetTracSum)); n != 7 {
		t.Errorf("tracsum has %d aspects, want 7", n)
	}
	if n := len(Aspects(AspectSetPCoA)); n != 16 {
		t.Errorf("pcoa has %d aspects, want 16", n)
	}
	if Aspects("nope") != nil {
		t.Error("unknown set should be nil")
	}
	for _, tc := range []struct {
		desc, set, code, wantCode, wantName string
	}{
		{"tracsum by code", AspectSetTracSum, "s", "s", "Side Effects"},
		{"tracsum upper case", AspectSetTracSum, "D", "d", "Duration"},
		{"tracsum by name", AspectSetTracSum, "medicine", "m", "Medicine"},
		{"pcoa two letters", AspectSetPCoA, "fd", "FD", "Follow-up Duration"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			a, ok := LookupAspect(tc.set, tc.code)
			if !ok || a.Code != tc.wantCode || a.Name != tc.wantName || a.Description == "" {
				t.Errorf("LookupAspect(%s, %s) = %+v, %v", tc.set, tc.code, a, ok)
			}
		})
	}
}

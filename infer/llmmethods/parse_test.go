package llmmethods

import (
	"slices"
	"testing"
)

func TestParseSummaryCitations(t *testing.T) {
	cases := []struct {
		desc     string
		answer   string
		summary  string
		idx      []int
		problems []string
	}{
		{"exact", "Summary: The study tests drug Z.\nCitations: [1, 2]", "The study tests drug Z.", []int{1, 2}, nil},
		{"one line", "Summary: The study tests drug Z. Citations: [2]", "The study tests drug Z.", []int{2}, nil},
		{"markdown", "**Summary:** The study tests drug Z.\n\n**Citations:** [0,3]", "The study tests drug Z.", []int{0, 3}, nil},
		{"no brackets, repeats, unsorted", "Summary: X.\nCitations: 3, 1, 3", "X.", []int{1, 3}, nil},
		{"range", "Summary: X.\nCitations: [1-3]", "X.", []int{1, 2, 3}, nil},
		{"sentence markers", "Summary: X.\nCitations: [S1], [S2]", "X.", []int{1, 2}, nil},
		{"citation label singular", "Summary: X.\nCitation: [2]", "X.", []int{2}, nil},
		{"unlabelled summary", "The study tests drug Z.\nCitations: [1]", "The study tests drug Z.", []int{1}, nil},
		{"explanation after citations", "Summary: X.\nCitations: [1]\nSentence 1 states the aim and 3 the result.", "X.", []int{1}, nil},
		{"commentary after summary", "Summary: X.\n\nI hope this helps.\nCitations: [1]", "X.", []int{1}, nil},
		{"negative", "Summary: Unknown.\nCitations: Null.", "Unknown.", []int{}, nil},
		{"negative without period", "Summary: Unknown\nCitations: Null", "Unknown.", []int{}, nil},
		{"bare unknown", "Unknown.", "Unknown.", []int{}, nil},
		{"negative with empty list", "Summary: Unknown.\nCitations: []", "Unknown.", []int{}, nil},
		{"negative with citations", "Summary: Unknown.\nCitations: [2]", "Unknown.", []int{}, []string{ProblemUnknownWithCitations}},
		{"out of range dropped", "Summary: X.\nCitations: [1, 9]", "X.", []int{1}, []string{ProblemIndexOutOfRange}},
		{"no citations", "Summary: X.", "X.", []int{}, []string{ProblemNoCitations}},
		{"bad citations", "Summary: X.\nCitations: the second sentence", "X.", []int{}, []string{ProblemBadCitations}},
		{"positive with null citations", "Summary: X.\nCitations: Null.", "X.", []int{}, nil},
		{"empty answer", "   ", "Unknown.", []int{}, []string{ProblemNoSummary}},
		{"label only", "Summary:\nCitations: [1]", "Unknown.", []int{}, []string{ProblemNoSummary}},
	}
	for _, tc := range cases {
		a := ParseSummaryCitations(tc.answer, 4)
		if a.Summary != tc.summary || !slices.Equal(a.Indexes, tc.idx) || !slices.Equal(a.Problems, tc.problems) || a.Indexes == nil {
			t.Errorf("%s: got %q %v %v, want %q %v %v", tc.desc, a.Summary, a.Indexes, a.Problems, tc.summary, tc.idx, tc.problems)
		}
	}
}

func TestParseEvidence(t *testing.T) {
	cases := []struct {
		desc        string
		answer      string
		withSummary bool
		summary     string
		idx         []int
		phrases     []string
		problems    []string
	}{
		{"intrinsic exact", "Indices: [1, 2]\nKey phrases: [\"drug Z\", \"relapse\"]\nSummary: X.", true, "X.", []int{1, 2}, []string{"drug Z", "relapse"}, nil},
		{"pcoa numbering", "1. Indices of involved sentences: [1]\n2. Key phrases: [\"drug Z\"]\n3. Summary: X.", true, "X.", []int{1}, []string{"drug Z"}, nil},
		{"markdown headings", "#Indices of involved sentences:\n[3]\n#Key phrases:\n- drug Z\n- placebo\n#Summary:\nX.", true, "X.", []int{3}, []string{"drug Z", "placebo"}, nil},
		{"quoted phrases not json", "Indices: 1\nKey phrases: \"drug Z\", 'x' \"condition W\"\nSummary: X.", true, "X.", []int{1}, []string{"drug Z", "condition W"}, nil},
		{"semicolons", "Indices: 1\nKey phrases: drug Z; relapse\nSummary: X.", true, "X.", []int{1}, []string{"drug Z", "relapse"}, nil},
		{"intrinsic negative", "Indices: []\nKey phrases: []\nSummary: Unknown.", true, "Unknown.", []int{}, []string{}, nil},
		{"intrinsic bare unknown", "Unknown.", true, "Unknown.", []int{}, []string{}, nil},
		{"intrinsic no summary", "Indices: [1]\nKey phrases: [\"a\"]", true, "Unknown.", []int{}, []string{}, []string{ProblemNoSummary}},
		{"intrinsic no phrases", "Indices: [1]\nSummary: X.", true, "X.", []int{1}, []string{}, []string{ProblemNoPhrases}},
		{"retrieve", "Indices: [0, 2]\nKey phrases: [\"kinase Q\"]", false, "", []int{0, 2}, []string{"kinase Q"}, nil},
		{"retrieve none", "Indices: []\nKey phrases: []", false, "", []int{}, []string{}, nil},
		{"retrieve no indices", "Key phrases: [\"kinase Q\"]", false, "", []int{}, []string{"kinase Q"}, []string{ProblemNoCitations}},
		{"retrieve garbage", "I think sentence two.", false, "", []int{}, []string{}, []string{ProblemNoPhrases, ProblemNoCitations}},
	}
	for _, tc := range cases {
		a := ParseEvidence(tc.answer, 4, tc.withSummary)
		if a.Summary != tc.summary || !slices.Equal(a.Indexes, tc.idx) || !slices.Equal(a.Phrases, tc.phrases) ||
			!slices.Equal(a.Problems, tc.problems) || a.Phrases == nil || a.Indexes == nil {
			t.Errorf("%s: got %q %v %q %v, want %q %v %q %v", tc.desc, a.Summary, a.Indexes, a.Phrases, a.Problems,
				tc.summary, tc.idx, tc.phrases, tc.problems)
		}
	}
}

func TestParseSummary(t *testing.T) {
	cases := []struct {
		answer, want string
		problems     []string
	}{
		{"Summary: X.", "X.", nil},
		{"X is studied.", "X is studied.", nil},
		{"Summary: \"X.\"", "X.", nil},
		{"Summary: Unknown", "Unknown.", nil},
		{"", "Unknown.", []string{ProblemNoSummary}},
	}
	for _, tc := range cases {
		a := ParseSummary(tc.answer)
		if a.Summary != tc.want || !slices.Equal(a.Problems, tc.problems) {
			t.Errorf("ParseSummary(%q) = %q %v, want %q %v", tc.answer, a.Summary, a.Problems, tc.want, tc.problems)
		}
	}
}

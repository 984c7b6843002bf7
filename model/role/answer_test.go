package role

import (
	"reflect"
	"testing"
)

// TestParseMarked: another marker is read as Parse reads [CITE], and [CITE] is then plain text.
func TestParseMarked(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       Output
	}{
		{"paper form", "Adults with asthma.\nCitations: 0, 3", Output{Summary: "Adults with asthma.", Indexes: []int{0, 3}}},
		{"any case", "Adults. CITATIONS: 2", Output{Summary: "Adults.", Indexes: []int{2}}},
		{"[CITE] is text", "Adults. [CITE] 1", Output{Summary: "Adults. [CITE] 1", Indexes: []int{}, Problems: []string{ProblemNoCitations}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseMarked(tc.text, 5, "Citations:"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseMarked(%q) = %+v, want %+v", tc.text, got, tc.want)
			}
		})
	}
}

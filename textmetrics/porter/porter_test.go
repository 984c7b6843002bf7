package porter

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

func TestStemExamples(t *testing.T) {
	tests := []struct {
		desc, word, want string
	}{
		{"plural sses", "caresses", "caress"},
		{"NLTK ies of length 4", "dies", "die"},
		{"ies longer", "flies", "fli"},
		{"irregular pool", "dying", "die"},
		{"irregular checked before lowercasing", "Sky", "ski"},
		{"eed with measure 0", "feed", "feed"},
		{"double consonant dropped", "hopping", "hop"},
		{"double l kept", "falling", "fall"},
		{"cvc gets e", "filing", "file"},
		{"alli rerun of step 2", "radicalli", "radic"},
		{"logi keeps l in measure", "geology", "geolog"},
		{"long clinical word", "hospitalizations", "hospit"},
		{"two letters untouched", "Is", "is"},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		if got := Stem(tc.word); got != tc.want {
			t.Errorf("%s: Stem(%q) = %q, want %q", tc.desc, tc.word, got, tc.want)
		}
	}
}

// TestStemGolden compares with NLTK on the vocabulary in testdata/stems.tsv
// (regenerate: /usr/bin/python3 tools/golden/porter_golden.py eval/porter/testdata/stems.tsv).
func TestStemGolden(t *testing.T) {
	f, err := os.Open("testdata/stems.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n, bad := 0, 0
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "#") {
			continue
		}
		word, want, ok := strings.Cut(text, "\t")
		if !ok {
			t.Fatalf("stems.tsv:%d: no tab", line)
		}
		n++
		if got := Stem(word); got != want {
			bad++
			if bad <= 20 {
				t.Errorf("stems.tsv:%d: Stem(%q) = %q, NLTK %q", line, word, got, want)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 5000 {
		t.Fatalf("golden file has %d words, want >= 5000", n)
	}
	if bad > 0 {
		t.Errorf("%d of %d words differ from NLTK", bad, n)
	}
}

func BenchmarkStem(b *testing.B) {
	words := []string{"hospitalizations", "randomized", "patients", "significantly", "controlled"}
	for i := 0; b.Loop(); i++ {
		Stem(words[i%len(words)])
	}
}

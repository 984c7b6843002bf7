package tracker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestTextbookTerms(t *testing.T) {
	for _, tc := range []struct {
		desc, in string
		want     []string
	}{
		{"lowercase, one-character tokens dropped, bigrams of the kept tokens",
			"A trial of 5 Drugs in adults", []string{"trial", "of", "drugs", "in", "adults", "trial of", "of drugs", "drugs in", "in adults"}},
		{"punctuation and hyphens split, digits and underscores are word characters",
			"50-mg doses (n=12); x_y.", []string{"50", "mg", "doses", "12", "x_y", "50 mg", "mg doses", "doses 12", "12 x_y"}},
		{"unicode letters", "Étude über", []string{"étude", "über", "étude über"}},
		{"nothing", " - . ", nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := textbookTerms(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("textbookTerms(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// syntheticTextbookRows returns rows of two aspects whose labels depend on a few words and on the
// position, with some noise, and a vocabulary that the test rows only partly share.
func syntheticTextbookRows(n int, seed uint64) []Example {
	rng := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields("patients received placebo dose mg outcome mortality trial randomized weeks " +
		"aims assess efficacy safety adverse events nausea headache children adults aged years")
	var out []Example
	for i := range n {
		doc := 4 + rng.IntN(8)
		idx := rng.IntN(doc)
		var ws []string
		for range 3 + rng.IntN(9) {
			ws = append(ws, words[rng.IntN(len(words))])
		}
		if rng.IntN(7) == 0 {
			ws = append(ws, fmt.Sprintf("w%d", rng.IntN(40)))
		}
		text := strings.Join(ws, " ") + "."
		aspect := int32(i % 2)
		score := -1.5 + 0.8*float64(strings.Count(text, "placebo")+strings.Count(text, "nausea")) - 1.2*float64(idx)/float64(doc)
		if aspect == 1 {
			score = -1 + 0.9*float64(strings.Count(text, "aims")+strings.Count(text, "assess"))
		}
		label := float32(0)
		if score+rng.NormFloat64() > 0 {
			label = 1
		}
		out = append(out, Example{Aspect: aspect, Pos: PositionFeatures(idx, doc), Label: label, Text: text})
	}
	return out
}

// TestFitLogisticConverges checks the optimality condition of the regression: at the returned
// weights the gradient of C * weighted log-loss + ||w||^2 / 2 (intercept unpenalised) vanishes.
func TestFitLogisticConverges(t *testing.T) {
	exs := syntheticTextbookRows(400, 3)
	tb, err := FitTextbook(exs, 2)
	if err != nil {
		t.Fatal(err)
	}
	for a, m := range tb.Aspects {
		if m == nil {
			t.Fatalf("aspect %d not fitted", a)
		}
		var npos, n float64
		for _, e := range exs {
			if int(e.Aspect) == a {
				n++
				if e.Label > 0 {
					npos++
				}
			}
		}
		nt := len(m.Terms)
		g := make([]float64, nt+NumTextbookPos+1)
		for j := range nt + NumTextbookPos {
			g[j] = m.Weights[j]
		}
		for i := range exs {
			e := &exs[i]
			if int(e.Aspect) != a {
				continue
			}
			sw := n / (2 * (n - npos))
			if e.Label > 0 {
				sw = n / (2 * npos)
			}
			r := TextbookC * sw * (sigmoid(m.logit(textbookTerms(e.Text), e)) - float64(e.Label))
			x := m.vectorize(textbookTerms(e.Text))
			for k, j := range x.idx {
				g[j] += r * x.val[k]
			}
			for k, f := range textbookPos(e) {
				g[nt+k] += r * f
			}
			g[nt+NumTextbookPos] += r
		}
		for j, gj := range g {
			if math.Abs(gj) > 1e-4 {
				t.Fatalf("aspect %d: gradient %d = %g at the solution", a, j, gj)
			}
		}
	}
}

// TestTextbookMatchesSklearn compares the baseline's probabilities with scikit-learn's
// (testdata/textbook_sklearn.py: TfidfVectorizer + LogisticRegression as the recipe writes them)
// on synthetic rows. Skipped when no python3 with scikit-learn is found (Debian: apt-get install
// python3-sklearn, which installs into /usr/bin/python3, tried after the python3 of PATH).
func TestTextbookMatchesSklearn(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: starts scikit-learn")
	}
	python := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import sklearn").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		t.Skip("no python3 with scikit-learn (apt-get install python3-sklearn)")
	}
	train, test := syntheticTextbookRows(500, 5), syntheticTextbookRows(200, 6)
	row := func(e Example) []any {
		p := textbookPos(&e)
		return []any{e.Aspect, e.Text, p[0], p[1], p[2], e.Label}
	}
	in := map[string][][]any{}
	for _, e := range train {
		in["train"] = append(in["train"], row(e))
	}
	for _, e := range test {
		in["test"] = append(in["test"], row(e))
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "testdata/textbook_sklearn.py")
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scikit-learn reference: %v\n%s", err, stderr.String())
	}
	var want []float64
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	tb, err := FitTextbook(train, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := tb.Score(test)
	var worst float64
	for i := range test {
		worst = math.Max(worst, math.Abs(float64(got[i])-want[i]))
	}
	if worst > 1e-5 {
		t.Errorf("largest probability difference from scikit-learn %g (want <= 1e-5)", worst)
	}
	t.Logf("largest probability difference from scikit-learn: %.2g", worst)
}

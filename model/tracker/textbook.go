package tracker

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
)

// TextbookC is the inverse L2 strength of the textbook baseline's logistic regression (scikit-learn's
// C): the recipe's value, not tuned on TracSum.
const TextbookC = 10.0

// NumTextbookPos is the number of position features of the textbook baseline: relative position,
// first sentence, last sentence (PositionFeatures' features 0, 2 and 3).
const NumTextbookPos = 3

// Textbook is the strong lexical baseline of the tracker, the textbook recipe written the way
// scikit-learn users write it: per aspect, a TfidfVectorizer of word 1-2-grams (lowercase, tokens
// of two or more word characters, sublinear tf, smoothed idf, L2-normalised rows) fitted on that
// aspect's training sentences, plus three position features (relative position, first sentence,
// last sentence), and a logistic regression with C = TextbookC and balanced class weights,
// solved to convergence (Newton-CG); a sentence is tracked at probability 0.5. It reads the
// sentences' text, not the tracker's subword ids, and nothing of the tracker's configuration:
// it is the same baseline whatever the tracker is. Parity with scikit-learn:
// TestTextbookMatchesSklearn.
type Textbook struct {
	// Aspects holds one fitted regression per aspect index (nil for an aspect without training
	// rows of both classes, which then scores 0).
	Aspects []*TextbookAspect `json:"aspects"`
}

// TextbookAspect is one aspect's vectorizer and regression.
type TextbookAspect struct {
	// Terms are the vocabulary (unigrams, and bigrams as "a b") in index order; IDF their weights.
	Terms []string  `json:"terms"`
	IDF   []float64 `json:"idf"`
	// Weights are the term weights followed by the NumTextbookPos position weights; Bias is the
	// unpenalised intercept.
	Weights []float64 `json:"weights"`
	Bias    float64   `json:"bias"`
	index   map[string]int
}

// textbookTerms returns the word 1- and 2-grams of a sentence as scikit-learn's default analyzer
// makes them: lowercased, tokens = maximal runs of two or more letters, digits, marks or
// underscores (the token pattern (?u)\b\w\w+\b), bigrams of consecutive tokens joined by a space.
func textbookTerms(s string) []string {
	var toks []string
	start := -1
	flush := func(end int) {
		if start >= 0 {
			if t := s[start:end]; len([]rune(t)) >= 2 {
				toks = append(toks, strings.ToLower(t))
			}
		}
		start = -1
	}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_' {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	out := slices.Clone(toks)
	for i := 1; i < len(toks); i++ {
		out = append(out, toks[i-1]+" "+toks[i])
	}
	return out
}

// textbookPos returns the baseline's position features of an example.
func textbookPos(e *Example) [NumTextbookPos]float64 {
	return [NumTextbookPos]float64{float64(e.Pos[0]), float64(e.Pos[2]), float64(e.Pos[3])}
}

// sparseRow is a row of term features: indices (ascending) and values.
type sparseRow struct {
	idx []int
	val []float64
}

// vectorize returns the L2-normalised sublinear tf-idf row of the terms known to a.
func (a *TextbookAspect) vectorize(terms []string) sparseRow {
	counts := map[int]int{}
	for _, t := range terms {
		if j, ok := a.index[t]; ok {
			counts[j]++
		}
	}
	var r sparseRow
	for j := range counts {
		r.idx = append(r.idx, j)
	}
	slices.Sort(r.idx)
	var sq float64
	for _, j := range r.idx {
		v := (1 + math.Log(float64(counts[j]))) * a.IDF[j]
		r.val = append(r.val, v)
		sq += v * v
	}
	if sq > 0 {
		n := math.Sqrt(sq)
		for i := range r.val {
			r.val[i] /= n
		}
	}
	return r
}

// logit returns the regression's logit of an example with the given terms.
func (a *TextbookAspect) logit(terms []string, e *Example) float64 {
	r := a.vectorize(terms)
	s := a.Bias
	for i, j := range r.idx {
		s += a.Weights[j] * r.val[i]
	}
	nt := len(a.Terms)
	for i, f := range textbookPos(e) {
		s += a.Weights[nt+i] * f
	}
	return s
}

// FitTextbook fits the textbook baseline on exs (one per sentence and aspect, with Text set) for
// the given number of aspects.
func FitTextbook(exs []Example, aspects int) (*Textbook, error) {
	byAspect := make([][]int, aspects)
	for i, e := range exs {
		if int(e.Aspect) < 0 || int(e.Aspect) >= aspects {
			return nil, fmt.Errorf("tracker: textbook baseline: row %d: aspect index %d of %d", i, e.Aspect, aspects)
		}
		byAspect[e.Aspect] = append(byAspect[e.Aspect], i)
	}
	tb := &Textbook{Aspects: make([]*TextbookAspect, aspects)}
	for a, rows := range byAspect {
		sub := make([]Example, len(rows))
		for j, i := range rows {
			sub[j] = exs[i]
		}
		tb.Aspects[a] = fitTextbookAspect(sub)
	}
	return tb, nil
}

// fitTextbookAspect fits one aspect's vectorizer and regression, or returns nil when the rows do
// not hold both classes (the regression is undefined).
func fitTextbookAspect(exs []Example) *TextbookAspect {
	var npos int
	for _, e := range exs {
		if e.Label > 0 {
			npos++
		}
	}
	if npos == 0 || npos == len(exs) {
		return nil
	}
	terms := make([][]string, len(exs))
	df := map[string]int{}
	for i, e := range exs {
		terms[i] = textbookTerms(e.Text)
		seen := map[string]bool{}
		for _, t := range terms[i] {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	a := &TextbookAspect{index: map[string]int{}}
	for t := range df {
		a.Terms = append(a.Terms, t)
	}
	// scikit-learn sorts its vocabulary too; the order changes no figure, only the file.
	slices.Sort(a.Terms)
	n := float64(len(exs))
	for j, t := range a.Terms {
		a.index[t] = j
		a.IDF = append(a.IDF, math.Log((1+n)/(1+float64(df[t])))+1)
	}
	nt := len(a.Terms)
	X := make([]sparseRow, len(exs))
	P := make([][NumTextbookPos]float64, len(exs))
	y := make([]float64, len(exs))
	sw := make([]float64, len(exs))
	// Balanced class weights: n / (2 * n_class), scikit-learn's class_weight="balanced".
	wPos, wNeg := n/(2*float64(npos)), n/(2*float64(len(exs)-npos))
	for i := range exs {
		X[i] = a.vectorize(terms[i])
		P[i] = textbookPos(&exs[i])
		y[i], sw[i] = 0, wNeg
		if exs[i].Label > 0 {
			y[i], sw[i] = 1, wPos
		}
	}
	w := fitLogistic(&design{X: X, P: P, nt: nt}, y, sw, TextbookC)
	a.Weights, a.Bias = w[:nt+NumTextbookPos], w[nt+NumTextbookPos]
	return a
}

// Score returns the probability of each example (Text set): the sigmoid of its aspect's logit.
func (t *Textbook) Score(exs []Example) []float32 {
	out := make([]float32, len(exs))
	for i := range exs {
		out[i] = float32(sigmoid(t.Logit(&exs[i])))
	}
	return out
}

// Logit returns the logit of one example (0 for an aspect without a regression).
func (t *Textbook) Logit(e *Example) float64 {
	a := int(e.Aspect)
	if a < 0 || a >= len(t.Aspects) || t.Aspects[a] == nil {
		return 0
	}
	return t.Aspects[a].logit(textbookTerms(e.Text), e)
}

// design is the regression's design matrix: sparse term columns, then NumTextbookPos dense
// position columns, then the intercept.
type design struct {
	X  []sparseRow
	P  [][NumTextbookPos]float64
	nt int
}

func (d *design) cols() int { return d.nt + NumTextbookPos + 1 }

// mul returns X w.
func (d *design) mul(w []float64) []float64 {
	out := make([]float64, len(d.X))
	b := w[d.nt+NumTextbookPos]
	for i, r := range d.X {
		s := b
		for k, j := range r.idx {
			s += w[j] * r.val[k]
		}
		for k, f := range d.P[i] {
			s += w[d.nt+k] * f
		}
		out[i] = s
	}
	return out
}

// mulT adds X^T v to out.
func (d *design) mulT(v, out []float64) {
	for i, r := range d.X {
		for k, j := range r.idx {
			out[j] += r.val[k] * v[i]
		}
		for k, f := range d.P[i] {
			out[d.nt+k] += f * v[i]
		}
		out[d.nt+NumTextbookPos] += v[i]
	}
}

// logisticFitIterations bounds the Newton iterations; convergence takes 10-20 on TracSum.
const logisticFitIterations = 100

// logisticGradTol is the convergence tolerance on the largest gradient entry, relative to the
// total sample weight (so a mean-loss gradient of 1e-8 per unit of C).
const logisticGradTol = 1e-8

// fitLogistic minimises C * sum_i sw_i * log(1 + exp(-s_i z_i)) + ||w||^2 / 2 over the weights
// of d (the intercept, d's last column, is not penalised, as in scikit-learn's lbfgs and
// newton-cg solvers) by Newton's method with conjugate-gradient steps and a backtracking line
// search: the objective is smooth and strictly convex, so this converges to the unique optimum
// (to logisticGradTol), which is what makes the baseline reproducible and comparable with
// scikit-learn's, unlike a fixed number of first-order steps.
func fitLogistic(d *design, y, sw []float64, C float64) []float64 {
	nc := d.cols()
	ib := nc - 1
	w := make([]float64, nc)
	var wsum float64
	for _, s := range sw {
		wsum += s
	}
	objective := func(w []float64) (float64, []float64) {
		z := d.mul(w)
		var f float64
		for i, zi := range z {
			// log(1+exp(-m)) computed stably, m = margin.
			m := zi
			if y[i] == 0 {
				m = -zi
			}
			if m > 0 {
				f += sw[i] * math.Log1p(math.Exp(-m))
			} else {
				f += sw[i] * (-m + math.Log1p(math.Exp(m)))
			}
		}
		f *= C
		for j := range ib {
			f += w[j] * w[j] / 2
		}
		return f, z
	}
	f, z := objective(w)
	for range logisticFitIterations {
		p := make([]float64, len(z))
		r := make([]float64, len(z))
		h := make([]float64, len(z))
		for i, zi := range z {
			p[i] = sigmoid(zi)
			r[i] = C * sw[i] * (p[i] - y[i])
			h[i] = C * sw[i] * p[i] * (1 - p[i])
		}
		g := make([]float64, nc)
		d.mulT(r, g)
		for j := range ib {
			g[j] += w[j]
		}
		var gmax float64
		for _, gj := range g {
			gmax = math.Max(gmax, math.Abs(gj))
		}
		if gmax <= logisticGradTol*C*wsum {
			break
		}
		hess := func(v []float64) []float64 {
			xv := d.mul(v)
			for i := range xv {
				xv[i] *= h[i]
			}
			out := make([]float64, nc)
			d.mulT(xv, out)
			for j := range ib {
				out[j] += v[j]
			}
			// A tiny ridge on the intercept keeps H positive definite when every h_i underflows.
			out[ib] += 1e-10 * v[ib]
			return out
		}
		step := conjugateGradient(hess, g, math.Min(0.5, math.Sqrt(gmax))*norm2(g))
		var gd float64
		for j := range g {
			gd += g[j] * step[j]
		}
		t := 1.0
		next := make([]float64, nc)
		for range 60 {
			for j := range w {
				next[j] = w[j] + t*step[j]
			}
			fn, zn := objective(next)
			if fn <= f+1e-4*t*gd {
				copy(w, next)
				f, z = fn, zn
				break
			}
			t /= 2
		}
		if t < 1e-15 {
			break
		}
	}
	return w
}

// conjugateGradient returns an approximate solution of H x = -g (H symmetric positive definite,
// given by its product), stopping when the residual's norm is below tol.
func conjugateGradient(hess func([]float64) []float64, g []float64, tol float64) []float64 {
	n := len(g)
	x := make([]float64, n)
	r := make([]float64, n)
	for i := range r {
		r[i] = -g[i]
	}
	p := slices.Clone(r)
	rr := dot(r, r)
	for range 500 {
		if math.Sqrt(rr) <= tol {
			break
		}
		hp := hess(p)
		alpha := rr / dot(p, hp)
		for i := range x {
			x[i] += alpha * p[i]
			r[i] -= alpha * hp[i]
		}
		rr2 := dot(r, r)
		beta := rr2 / rr
		rr = rr2
		for i := range p {
			p[i] = r[i] + beta*p[i]
		}
	}
	return x
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func norm2(a []float64) float64 { return math.Sqrt(dot(a, a)) }

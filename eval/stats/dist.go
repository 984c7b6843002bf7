package stats

import "math"

// regIncBeta is the regularized incomplete beta function I_x(a, b),
// evaluated with the continued fraction of Numerical Recipes (modified
// Lentz), switching to the symmetric form where the fraction converges
// slowly. Relative accuracy is about 1e-14 for the (a, b) of correlation
// tests.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(a) || math.IsNaN(b):
		return math.NaN()
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const (
		maxIter = 10000
		eps     = 1e-16
	)
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < lentzTiny {
		d = lentzTiny
	}
	d = 1 / d
	h := d
	var del float64
	for m := 1; m <= maxIter; m++ {
		fm := float64(m)
		m2 := 2 * fm
		// Each iteration takes the even and then the odd term of the fraction.
		c, d, del = lentzStep(fm*(b-fm)*x/((qam+m2)*(a+m2)), c, d)
		h *= del
		c, d, del = lentzStep(-(a+fm)*(qab+fm)*x/((a+m2)*(qap+m2)), c, d)
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}

// lentzTiny stands in for a zero denominator in the modified Lentz method,
// which would otherwise divide by zero.
const lentzTiny = 1e-300

// lentzStep advances the modified Lentz recurrences by one term of the
// continued fraction, with partial numerator aa, and returns the new c and
// d and the factor d*c by which that term changes the fraction.
func lentzStep(aa, c, d float64) (float64, float64, float64) {
	d = 1 + aa*d
	if math.Abs(d) < lentzTiny {
		d = lentzTiny
	}
	c = 1 + aa/c
	if math.Abs(c) < lentzTiny {
		c = lentzTiny
	}
	d = 1 / d
	return c, d, d * c
}

// corrPValue is the two-sided p-value of a correlation r over n
// observations under the null of no correlation: the Student t test with
// n-2 degrees of freedom, written as I_{1-r^2}((n-2)/2, 1/2). It equals
// scipy's pearsonr p (2*beta(n/2-1, n/2-1, loc=-1, scale=2).sf(|r|)) and
// spearmanr p (2*t.sf(|t|, n-2)).
func corrPValue(r float64, n int) float64 {
	df := float64(n - 2)
	return regIncBeta(df/2, 0.5, (1-r)*(1+r))
}

// normTwoSided is 2*P(Z > |z|) for a standard normal Z.
func normTwoSided(z float64) float64 {
	return math.Erfc(math.Abs(z) / math.Sqrt2)
}

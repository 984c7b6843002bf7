package subword

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Synthetic text for tests and benchmarks: sentences in the style of clinical abstracts with doses,
// intervals, p-values, drug names, unicode units and symbols, plus deliberately hostile strings.

var (
	corpusSubjects = []string{"Patients", "Participants", "The intervention group", "Children aged 6–12 years",
		"Adults with type 2 diabetes", "Women", "Men", "Older adults (≥65 years)", "Infants", "Smokers"}
	corpusVerbs = []string{"received", "were randomized to", "were treated with", "did not receive", "were given",
		"reported", "showed", "experienced", "completed", "discontinued"}
	corpusDrugs = []string{"metformin", "atorvastatin", "amoxicillin–clavulanate", "placebo", "insulin glargine",
		"5-fluorouracil", "IL-6 inhibitor", "β-blocker", "ACE inhibitors", "paracetamol", "doxycycline", "Vitamin D₃"}
	corpusUnits = []string{"mg", "mg/kg", "µg", "mL", "IU", "mmol/L", "g/dL", "mg/day", "µg/kg/min", "%"}
	corpusTails = []string{"for 12 weeks", "twice daily", "over 6 months", "at baseline", "vs. control",
		"(n = 1,024)", "(95% CI: 8.3-15.9)", "(P = .001)", "(p<0.05)", "(HR 0.72; 95% CI 0.61–0.85)",
		"[1]", "(OR = 2.1, 95 % CI 1.3 to 3.4)", "— see Table 2", "i.e., the patient's dose", "they'll, we've, it's"}
	corpusHostile = []string{"\ufeffBOM at start", "tab\there", "line\nbreak\r\nCRLF", "nbsp\u00a0space",
		"zero\u200bwidth", "soft\u00adhyphen", "combining e\u0301 and a\u0308", "\u0301leading mark",
		"ctrl\x00\x01\x1f\x7f", "invalid \xff\xfe bytes", "emoji 😀👍🏽", "CJK 中文字符", "RTL עברית العربية",
		"math ≤ ≥ ± × ÷ ∞ √", "quotes “double” ‘single’ «guillemets»", "  many    spaces  ", "ellipsis…",
		"superscript x² and subscript H₂O", "fullwidth ＡＢＣ１２３", "ligature ﬁ", "100000000", "0000",
		"aaaaaaa", "......", "!!!???", "'s't're've'm'll'd", "[SEP] literal [CLS]", "[UNK]", "\u2028sep\u2029",
		"private\ue000use", "noncharacter\ufdd0", "Ω ohm sign Ω", "dotless ı and İ", "a\u200db", "x\u0000y"}
)

// genSentence returns one synthetic sentence from r.
func genSentence(r *rand.Rand) string {
	pick := func(l []string) string { return l[r.IntN(len(l))] }
	var b strings.Builder
	b.WriteString(pick(corpusSubjects) + " " + pick(corpusVerbs) + " " + pick(corpusDrugs))
	fmt.Fprintf(&b, " %d %s", 1+r.IntN(2000), pick(corpusUnits))
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, " or %.1f %s", r.Float64()*100, pick(corpusUnits))
	}
	b.WriteString(" " + pick(corpusTails))
	if r.IntN(8) == 0 {
		b.WriteString(" " + pick(corpusHostile))
	}
	b.WriteString(".")
	return b.String()
}

// genCorpus returns n deterministic synthetic sentences.
func genCorpus(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]string, n)
	for i := range out {
		out[i] = genSentence(r)
	}
	return out
}

// genZipfCorpus returns about size bytes of sentences over a large pseudo-word vocabulary with
// Zipf-distributed frequencies (like real text), mixed with synthetic clinical sentences, so that
// training has enough distinct words to fill an 8000-token vocabulary.
func genZipfCorpus(seed uint64, size int) []string {
	r := rand.New(rand.NewPCG(seed, 2))
	syllables := []string{"ka", "to", "mi", "ne", "ro", "sa", "lu", "pe", "di", "gra", "stro", "phy", "lin",
		"zol", "mab", "tin", "cep", "hy", "dro", "xi", "ver", "cor", "al", "en", "ol", "ine", "ate", "ide"}
	const nWords = 100000
	words := make([]string, nWords)
	for i := range words {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(syllables[r.IntN(len(syllables))])
		}
		words[i] = b.String()
		if r.IntN(10) == 0 {
			words[i] = strings.ToUpper(words[i][:1]) + words[i][1:]
		}
	}
	// Zipf with exponent ~1.1 by inverse-CDF sampling on a precomputed table.
	cdf := make([]float64, nWords)
	total := 0.0
	for i := range cdf {
		total += 1 / math.Pow(float64(i+1), 1.1)
		cdf[i] = total
	}
	var out []string
	n := 0
	for n < size {
		var s string
		if r.IntN(4) == 0 {
			s = genSentence(r)
		} else {
			var b strings.Builder
			for j := range 8 + r.IntN(20) {
				if j > 0 {
					b.WriteByte(' ')
				}
				k, _ := slices.BinarySearch(cdf, r.Float64()*total)
				b.WriteString(words[min(k, nWords-1)])
			}
			b.WriteByte('.')
			s = b.String()
		}
		out = append(out, s)
		n += len(s)
	}
	return out
}

package dataset

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"math/rand/v2"
	"strings"
)

// The built-in sample: synthetic clinical-trial abstracts with TracSum annotations, written by the
// project (no benchmark text). Every abstract is drawn from its own random stream (seed, index), so
// the sample is deterministic, can be generated lazily in any order and scales to any size without
// being held in memory.
//
// Labels are learnable by construction: a sentence is cited for an aspect exactly when it states a
// fact of that aspect (the dose sentence for Medicine, the adverse-event sentence for Side Effects,
// ...), and each summary is written from the same facts, copying drug names, numbers and units from
// the cited sentences. Background, conclusion and registration sentences are never cited. Aspects
// whose facts an abstract omits (Duration, Side Effects, sometimes Aims) are negative instances.

// SyntheticPMID returns the PMID of the i-th (0-based) synthetic abstract.
func SyntheticPMID(i int) string { return fmt.Sprintf("SYN%07d", i+1) }

// Synthetic yields n synthetic abstracts, each as its 7 TracSum instances (aspects in registry
// order, negatives included).
func Synthetic(seed int64, n int) iter.Seq[[]Instance] {
	return func(yield func([]Instance) bool) {
		for i := range n {
			if !yield(SyntheticAbstract(seed, i)) {
				return
			}
		}
	}
}

// WriteSynthetic writes n synthetic abstracts as TracSum JSONL (one instance per line).
func WriteSynthetic(w io.Writer, seed int64, n int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for ins := range Synthetic(seed, n) {
		for i := range ins {
			if err := enc.Encode(&ins[i]); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

type sentence struct {
	text    string
	aspects string // aspect codes the sentence is cited for
}

// gen draws the facts of one abstract and writes its sentences and summaries.
type gen struct {
	r *rand.Rand
}

func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }
func (g *gen) chance(p float64) bool   { return g.r.Float64() < p }
func (g *gen) between(lo, hi int) int  { return lo + g.r.IntN(hi-lo+1) }

var (
	drugPrefixes = []string{"ab", "bel", "cor", "dar", "eli", "fen", "gal", "hal", "ito", "jen", "kor", "lum", "mav",
		"nor", "ocu", "pra", "quin", "ral", "sel", "tor", "ulo", "ven", "war", "xal", "yon", "zan", "tri", "ple", "mir", "dex"}
	drugMiddles = []string{"a", "e", "i", "o", "u", "ava", "eti", "ori", "uxa", "ime", "ola"}
	drugClasses = []struct{ stem, class string }{
		{"mab", "monoclonal antibody"}, {"tinib", "kinase inhibitor"}, {"pril", "ACE inhibitor"},
		{"sartan", "angiotensin receptor blocker"}, {"gliptin", "DPP-4 inhibitor"}, {"vir", "antiviral agent"},
		{"statin", "statin"}, {"olol", "beta blocker"}, {"prazole", "proton pump inhibitor"},
		{"cycline", "antibiotic"}, {"parin", "anticoagulant"}, {"lukast", "leukotriene antagonist"},
	}
	conditions = []struct{ name, endpoint, unit, population string }{
		{"advanced melanoma", "progression-free survival", "months", "patients"},
		{"type 2 diabetes", "change in HbA1c", "percentage points", "adults"},
		{"moderate-to-severe plaque psoriasis", "PASI 75 response rate", "%", "patients"},
		{"chronic heart failure", "hospitalisation rate for heart failure", "%", "patients"},
		{"rheumatoid arthritis", "ACR20 response rate", "%", "patients"},
		{"major depressive disorder", "change in MADRS total score", "points", "adults"},
		{"essential hypertension", "change in systolic blood pressure", "mmHg", "adults"},
		{"chronic obstructive pulmonary disease", "change in trough FEV1", "mL", "patients"},
		{"persistent asthma", "annualised exacerbation rate", "events per year", "patients"},
		{"non-small cell lung cancer", "overall survival", "months", "patients"},
		{"atrial fibrillation", "rate of stroke or systemic embolism", "%", "patients"},
		{"episodic migraine", "change in monthly migraine days", "days", "adults"},
		{"knee osteoarthritis", "change in WOMAC pain score", "points", "patients"},
		{"chronic hepatitis C", "sustained virological response rate", "%", "patients"},
		{"HIV-1 infection", "proportion with viral load below 50 copies/mL", "%", "adults"},
		{"early Parkinson's disease", "change in MDS-UPDRS part III score", "points", "patients"},
		{"ulcerative colitis", "clinical remission rate", "%", "patients"},
		{"relapsing multiple sclerosis", "annualised relapse rate", "relapses per year", "patients"},
		{"community-acquired pneumonia", "clinical cure rate", "%", "adults"},
		{"gout", "proportion with serum urate below 6 mg/dL", "%", "patients"},
		{"overactive bladder", "change in daily micturitions", "episodes", "women"},
		{"generalised anxiety disorder", "change in HAM-A total score", "points", "adults"},
		{"chronic kidney disease", "decline in eGFR", "mL/min/1.73 m2", "patients"},
		{"acute myeloid leukaemia", "complete remission rate", "%", "patients"},
		{"postoperative pain after knee replacement", "pain intensity at 24 hours", "points", "patients"},
		{"paediatric atopic dermatitis", "EASI 75 response rate", "%", "children"},
	}
	adverseEvents = []string{"nausea", "headache", "fatigue", "diarrhoea", "rash", "dizziness", "pruritus",
		"hypertension", "neutropenia", "elevated liver enzymes", "upper respiratory tract infection",
		"injection-site reactions", "constipation", "insomnia", "arthralgia", "peripheral oedema",
		"hypoglycaemia", "cough", "anaemia", "vomiting", "decreased appetite", "back pain"}
	routes   = []string{"orally", "intravenously", "subcutaneously", "by inhalation", "intramuscularly"}
	freqs    = []string{"once daily", "twice daily", "three times daily", "once weekly", "every 2 weeks", "every 3 weeks", "every 4 weeks"}
	designs  = []string{"randomized, double-blind, placebo-controlled", "randomized, open-label", "multicentre, randomized, double-blind", "randomized, controlled, parallel-group", "phase 3, randomized, double-blind"}
	headings = [][5]string{
		{"BACKGROUND:", "OBJECTIVE:", "METHODS:", "RESULTS:", "CONCLUSIONS:"},
		{"INTRODUCTION:", "AIMS:", "PATIENTS AND METHODS:", "RESULTS:", "CONCLUSION:"},
		{"BACKGROUND:", "PURPOSE:", "DESIGN, SETTING, AND PARTICIPANTS:", "FINDINGS:", "INTERPRETATION:"},
	}
)

// facts are what one abstract reports; summaries and sentences are both written from them.
type facts struct {
	drug, class, comparator, condition, endpoint, unit, population string
	dose, route, freq, design                                      string
	coDrug, coDose                                                 string
	n, centres, countries, age                                     int
	womenPct                                                       int
	duration                                                       string
	hasDuration, hasAE, hasAims, durationInline, hasCoDrug         bool
	valDrug, valComp, ciLo, ciHi                                   float64
	pValue                                                         string
	secondary, secondaryResult, aimsSummary                        string
	aes                                                            []string
	aePct, aeCompPct                                               []int
	seriousPct                                                     int
	ratio                                                          string
}

func (g *gen) drugName() (string, string) {
	c := drugClasses[g.r.IntN(len(drugClasses))]
	name := g.pick(drugPrefixes) + g.pick(drugMiddles) + c.stem
	return name, c.class
}

func numberFmt(v float64, unit string) string {
	switch {
	case unit == "%":
		return fmt.Sprintf("%.1f%%", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	default:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
}

func (g *gen) draw() facts {
	var f facts
	f.drug, f.class = g.drugName()
	c := conditions[g.r.IntN(len(conditions))]
	f.condition, f.endpoint, f.unit, f.population = c.name, c.endpoint, c.unit, c.population
	f.design = g.pick(designs)
	if strings.Contains(f.design, "placebo") || g.chance(0.4) {
		f.comparator = "placebo"
	} else {
		comp, _ := g.drugName()
		f.comparator = comp
	}
	units := []string{"mg", "mg", "mg", "mg/kg", "µg", "IU"}
	unit := g.pick(units)
	amount := []int{1, 2, 5, 10, 20, 25, 40, 50, 75, 100, 150, 200, 250, 300, 400, 500, 600, 800}[g.r.IntN(18)]
	if unit == "mg/kg" {
		amount = []int{1, 2, 3, 5, 10, 15}[g.r.IntN(6)]
	}
	f.dose = fmt.Sprintf("%d %s", amount, unit)
	f.route, f.freq = g.pick(routes), g.pick(freqs)
	f.n = g.between(24, 1400)
	f.centres, f.countries = g.between(3, 180), g.between(1, 24)
	f.age = g.between(8, 74)
	if f.population == "children" {
		f.age = g.between(4, 14)
	}
	f.womenPct = g.between(18, 82)
	f.hasDuration = g.chance(0.65)
	f.durationInline = g.chance(0.5)
	if g.chance(0.5) {
		f.duration = fmt.Sprintf("%d weeks", []int{4, 6, 8, 12, 16, 24, 26, 48, 52}[g.r.IntN(9)])
	} else {
		f.duration = fmt.Sprintf("%d months", []int{3, 6, 9, 12, 18, 24, 36}[g.r.IntN(7)])
	}
	f.hasAE = g.chance(0.75)
	f.hasAims = g.chance(0.9)
	f.hasCoDrug = g.chance(0.3)
	if f.hasCoDrug {
		f.coDrug, _ = g.drugName()
		f.coDose = fmt.Sprintf("%d mg", []int{5, 10, 20, 40, 80, 100}[g.r.IntN(6)])
	}
	base := 5 + g.r.Float64()*60
	if f.unit == "%" {
		f.valComp = math.Round(base*10) / 10
		f.valDrug = math.Round((base+2+g.r.Float64()*30)*10) / 10
	} else {
		f.valComp = math.Round(base*10) / 10
		f.valDrug = math.Round((base*(1.1+g.r.Float64()*0.8))*10) / 10
	}
	diff := f.valDrug - f.valComp
	f.ciLo = math.Round(diff*(0.3+g.r.Float64()*0.5)*10) / 10
	f.ciHi = math.Round(diff*(1.2+g.r.Float64()*0.6)*10) / 10
	f.pValue = g.pick([]string{"P < .001", "P = .001", "P = .003", "P = .01", "P = .02", "P = .04", "P < 0.001", "P = 0.002"})
	f.secondary = g.pick([]string{"quality of life", "time to treatment failure", "patient-reported symptom scores",
		"the proportion of responders at week 12", "hospital admissions", "rescue medication use"})
	k := g.between(2, 3)
	perm := g.r.Perm(len(adverseEvents))
	for j := range k {
		f.aes = append(f.aes, adverseEvents[perm[j]])
		f.aePct = append(f.aePct, g.between(4, 38))
		f.aeCompPct = append(f.aeCompPct, g.between(1, 20))
	}
	f.seriousPct = g.between(1, 15)
	f.ratio = g.pick([]string{"1:1", "1:1", "2:1", "1:1:1"})
	return f
}

func (f *facts) doseText() string {
	return fmt.Sprintf("%s %s %s", f.dose, f.route, f.freq)
}

func joinList(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func (g *gen) sentences(f *facts) (background, aims, methods, results []sentence, conclusion []sentence) {
	// In this order: each part draws from g's random source, and the sample must stay
	// byte-identical for a seed.
	background = g.background(f)
	aims = g.aims(f)
	methods = g.methods(f)
	results = g.results(f)
	conclusion = g.conclusion(f)
	return
}

// background is the opening: the condition's burden, sometimes the drug's promise.
func (g *gen) background(f *facts) []sentence {
	var background []sentence
	background = append(background, sentence{text: g.pick([]string{
		fmt.Sprintf("%s remains a major cause of morbidity worldwide.", capitalize(f.condition)),
		fmt.Sprintf("Treatment options for %s are limited and often poorly tolerated.", f.condition),
		fmt.Sprintf("Many %s with %s do not achieve adequate disease control with current therapy.", f.population, f.condition),
		fmt.Sprintf("The burden of %s on patients and health systems continues to grow.", f.condition),
	})})
	if g.chance(0.5) {
		background = append(background, sentence{text: g.pick([]string{
			fmt.Sprintf("%s is a %s that showed activity in early studies.", capitalize(f.drug), f.class),
			fmt.Sprintf("Previous trials of %ss in this setting were inconclusive.", f.class),
			"Evidence from adequately powered trials is scarce.",
		})})
	}
	return background
}

// aims is the objective sentence (aspect a) when f has one, and sets its summary.
func (g *gen) aims(f *facts) []sentence {
	if !f.hasAims {
		return nil
	}
	// Each wording has its own summary, so that the summary only says what the sentence says.
	variants := [][2]string{
		{fmt.Sprintf("We aimed to assess the efficacy and safety of %s in %s with %s.", f.drug, f.population, f.condition),
			fmt.Sprintf("To assess the efficacy and safety of %s in %s with %s.", f.drug, f.population, f.condition)},
		{fmt.Sprintf("This study evaluated whether %s improves %s in %s with %s.", f.drug, f.endpoint, f.population, f.condition),
			fmt.Sprintf("To evaluate whether %s improves %s in %s with %s.", f.drug, f.endpoint, f.population, f.condition)},
		{fmt.Sprintf("The objective was to compare %s with %s for the treatment of %s.", f.drug, f.comparator, f.condition),
			fmt.Sprintf("To compare %s with %s for %s.", f.drug, f.comparator, f.condition)},
		{fmt.Sprintf("To determine the effect of %s on %s in %s with %s.", f.drug, f.endpoint, f.population, f.condition),
			fmt.Sprintf("To determine the effect of %s on %s in %s with %s.", f.drug, f.endpoint, f.population, f.condition)},
	}
	v := variants[g.r.IntN(len(variants))]
	aims := []sentence{{aspects: "a", text: v[0]}}
	f.aimsSummary = v[1]
	return aims
}

// methods are the participants (p), the arms (i, m, and d when the duration is inline), the
// co-medication and duration when f has them, and the end points, in a drawn order.
func (g *gen) methods(f *facts) []sentence {
	part := sentence{aspects: "p", text: g.pick([]string{
		fmt.Sprintf("In this %s trial, %d %s with %s were enrolled at %d centres in %d countries.", f.design, f.n, f.population, f.condition, f.centres, f.countries),
		fmt.Sprintf("We conducted a %s trial involving %d %s with %s.", f.design, f.n, f.population, f.condition),
		fmt.Sprintf("A total of %d %s with %s underwent randomization.", f.n, f.population, f.condition),
	})}
	demo := sentence{aspects: "p", text: fmt.Sprintf("The mean age was %d years and %d%% of participants were women.", f.age, f.womenPct)}
	armText := fmt.Sprintf("%s %s", f.drug, f.doseText())
	durText := ""
	if f.hasDuration && f.durationInline {
		durText = " for " + f.duration
	}
	interAspects := "im"
	if f.hasDuration && f.durationInline {
		interAspects = "imd"
	}
	inter := sentence{aspects: interAspects, text: g.pick([]string{
		fmt.Sprintf("Patients were randomly assigned in a %s ratio to receive %s or %s%s.", f.ratio, armText, f.comparator, durText),
		fmt.Sprintf("Participants received %s or %s%s.", armText, f.comparator, durText),
		fmt.Sprintf("Eligible patients were randomized (%s) to %s given %s %s or %s%s.", f.ratio, f.drug, f.dose, f.freq, f.comparator, durText),
	})}
	if strings.Contains(inter.text, " given ") {
		// The route is part of the dose facts the summary copies, so it must be in the sentence.
		inter.text = strings.Replace(inter.text, fmt.Sprintf(" given %s %s", f.dose, f.freq), fmt.Sprintf(" given %s", f.doseText()), 1)
	}
	methods := []sentence{part}
	if g.chance(0.6) {
		methods = append(methods, demo)
	}
	if g.chance(0.5) {
		methods = append([]sentence{inter}, methods...)
	} else {
		methods = append(methods, inter)
	}
	if f.hasCoDrug {
		methods = append(methods, sentence{aspects: "m", text: fmt.Sprintf("All patients continued background therapy with %s %s once daily.", f.coDrug, f.coDose)})
	}
	if f.hasDuration && !f.durationInline {
		methods = append(methods, sentence{aspects: "d", text: g.pick([]string{
			fmt.Sprintf("Treatment was continued for %s.", f.duration),
			fmt.Sprintf("The treatment period lasted %s.", f.duration),
			fmt.Sprintf("Study drugs were administered for %s.", f.duration),
		})})
	}
	methods = append(methods, sentence{text: g.pick([]string{
		fmt.Sprintf("The primary end point was %s.", f.endpoint),
		fmt.Sprintf("The primary outcome was %s; %s was a secondary outcome.", f.endpoint, f.secondary),
	})})
	return methods
}

// results are the outcome sentences (o) and, when f has adverse events, their sentences (s)
// before or after them.
func (g *gen) results(f *facts) []sentence {
	var results []sentence
	unitDrug, unitComp := numberFmt(f.valDrug, f.unit), numberFmt(f.valComp, f.unit)
	ci := fmt.Sprintf("95%% CI, %.1f to %.1f", f.ciLo, f.ciHi)
	results = append(results, sentence{aspects: "o", text: g.pick([]string{
		fmt.Sprintf("The %s was %s with %s and %s with %s (difference, %.1f; %s; %s).", f.endpoint, unitDrug, f.drug, unitComp, f.comparator, f.valDrug-f.valComp, ci, f.pValue),
		fmt.Sprintf("%s reached %s in the %s group vs. %s in the %s group (%s; %s).", capitalize(f.endpoint), unitDrug, f.drug, unitComp, f.comparator, ci, f.pValue),
	})})
	if g.chance(0.6) {
		if g.chance(0.5) {
			results = append(results, sentence{aspects: "o", text: fmt.Sprintf("Improvements in %s were also greater with %s (%s).", f.secondary, f.drug, g.pick([]string{"P = .03", "P = .008", "P < .001"}))})
			f.secondaryResult = fmt.Sprintf("%s also improved more with %s", f.secondary, f.drug)
		} else {
			results = append(results, sentence{aspects: "o", text: fmt.Sprintf("No significant difference was observed in %s (%s).", f.secondary, g.pick([]string{"P = .41", "P = .27", "P = .68"}))})
			f.secondaryResult = fmt.Sprintf("%s did not differ", f.secondary)
		}
	}
	if f.hasAE {
		ae := g.adverseEvents(f)
		if g.chance(0.5) {
			results = append(ae, results...)
		} else {
			results = append(results, ae...)
		}
	}
	return results
}

// adverseEvents are the adverse-event sentences (aspect s).
func (g *gen) adverseEvents(f *facts) []sentence {
	aeParts := make([]string, len(f.aes))
	for j, ae := range f.aes {
		aeParts[j] = fmt.Sprintf("%s (%d%% vs. %d%%)", ae, f.aePct[j], f.aeCompPct[j])
	}
	ae := []sentence{{aspects: "s", text: g.pick([]string{
		fmt.Sprintf("The most common adverse events with %s were %s.", f.drug, joinList(aeParts)),
		fmt.Sprintf("Adverse events included %s.", joinList(aeParts)),
	})}}
	if g.chance(0.5) {
		ae = append(ae, sentence{aspects: "s", text: fmt.Sprintf("Serious adverse events occurred in %d%% of patients receiving %s.", f.seriousPct, f.drug)})
	}
	return ae
}

// conclusion is the closing sentence, sometimes with a trial registration number.
func (g *gen) conclusion(f *facts) []sentence {
	var conclusion []sentence
	conclusion = append(conclusion, sentence{text: g.pick([]string{
		fmt.Sprintf("%s improved %s in %s with %s.", capitalize(f.drug), f.endpoint, f.population, f.condition),
		fmt.Sprintf("These findings support further evaluation of %s in %s.", f.drug, f.condition),
		fmt.Sprintf("%s was effective and generally well tolerated.", capitalize(f.drug)),
	})})
	if g.chance(0.4) {
		conclusion = append(conclusion, sentence{text: fmt.Sprintf("ClinicalTrials.gov number, NCT%08d.", g.r.IntN(1e8))})
	}
	return conclusion
}

func (f *facts) summary(aspect string) string {
	switch aspect {
	case "a":
		return f.aimsSummary
	case "i":
		return fmt.Sprintf("%s %s versus %s.", capitalize(f.drug), f.doseText(), f.comparator)
	case "o":
		s := fmt.Sprintf("%s was %s with %s vs %s with %s (%s)", capitalize(f.endpoint), numberFmt(f.valDrug, f.unit), f.drug,
			numberFmt(f.valComp, f.unit), f.comparator, f.pValue)
		if f.secondaryResult != "" {
			s += "; " + f.secondaryResult
		}
		return s + "."
	case "p":
		return fmt.Sprintf("%d %s with %s.", f.n, f.population, f.condition)
	case "m":
		s := fmt.Sprintf("%s %s %s", capitalize(f.drug), f.dose, f.freq)
		if f.hasCoDrug {
			s += fmt.Sprintf("; %s %s", f.coDrug, f.coDose)
		}
		return s + "."
	case "d":
		return fmt.Sprintf("Treatment lasted %s.", f.duration)
	case "s":
		return fmt.Sprintf("Adverse events: %s.", joinList(f.aes))
	}
	return UnknownSummary
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// SyntheticAbstract returns the instances (one per TracSum aspect) of the i-th synthetic abstract.
func SyntheticAbstract(seed int64, i int) []Instance {
	g := &gen{r: rand.New(rand.NewPCG(uint64(seed), uint64(i)+0x9e3779b97f4a7c15))}
	f := g.draw()
	background, aims, methods, results, conclusion := g.sentences(&f)
	var doc []sentence
	useHeadings := g.chance(0.35)
	hs := headings[g.r.IntN(len(headings))]
	add := func(heading string, ss []sentence) {
		for k, s := range ss {
			if useHeadings && k == 0 && heading != "" {
				s.text = heading + " " + s.text
			}
			doc = append(doc, s)
		}
	}
	add(hs[0], background)
	if g.chance(0.5) || !useHeadings {
		add(hs[1], aims)
	} else {
		// Aims folded into the background block, without its own heading.
		doc = append(doc, aims...)
	}
	add(hs[2], methods)
	add(hs[3], results)
	add(hs[4], conclusion)

	pmid := SyntheticPMID(i)
	texts := make([]string, len(doc))
	for k, s := range doc {
		texts[k] = s.text
	}
	out := make([]Instance, 0, len(tracsumAspects))
	for _, a := range tracsumAspects {
		in := Instance{PMID: pmid, Document: texts, Aspect: a.Code, Summary: UnknownSummary, Indexes: []int{}, Sentences: []string{}}
		for k, s := range doc {
			if strings.Contains(s.aspects, a.Code) {
				in.Indexes = append(in.Indexes, k)
				in.Sentences = append(in.Sentences, s.text)
			}
		}
		if len(in.Indexes) > 0 {
			in.Summary = f.summary(a.Code)
		}
		out = append(out, in)
	}
	return out
}

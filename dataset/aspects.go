package dataset

import (
	"fmt"
	"strings"
)

// Aspect sets known to the registry.
const (
	// AspectSetTracSum is TracSum's 7 aspects, coded a i o p m d s.
	AspectSetTracSum = "tracsum"
	// AspectSetPCoA is PCoA's 16 aspects, coded OB P I C O F M TD PE SE FD AE R B FU RE.
	AspectSetPCoA = "pcoa"
)

// Aspect is one medical aspect: its code as used in the data, its name, and the description that
// prompts and model inputs use to say what the aspect covers.
type Aspect struct {
	Code        string
	Name        string
	Description string
}

var tracsumAspects = []Aspect{
	{"a", "Aims", "objective of the study"},
	{"i", "Intervention", "treatment method given to the participants"},
	{"o", "Outcomes", "results of the predefined variables"},
	{"p", "Participants", "participants, e.g. their disease and number"},
	{"m", "Medicine", "medicines used, e.g. name and dosage"},
	{"d", "Duration", "duration of the treatment"},
	{"s", "Side Effects", "observed adverse events"},
}

var pcoaAspects = []Aspect{
	{"OB", "Objective", "aim of the study: measured items, diseases and treatment"},
	{"P", "Participants", "number of participants and their diseases"},
	{"I", "Intervention", "treatment given to the intervention group and its administration"},
	{"C", "Comparator", "comparator treatment and its administration"},
	{"O", "Outcomes", "endpoints with their measured values"},
	{"F", "Findings", "main findings and conclusions"},
	{"M", "Medicines", "names of the medicines used"},
	{"TD", "Treatment Duration", "how long or until which condition treatment was given"},
	{"PE", "Primary Endpoints", "primary endpoints of the trial"},
	{"SE", "Secondary Endpoints", "secondary endpoints of the trial"},
	{"FD", "Follow-up Duration", "duration of the follow-up"},
	{"AE", "Adverse Events", "adverse events with their frequencies"},
	{"R", "Randomization", "randomization ratio and groups"},
	{"B", "Blinding", "blinding method of the trial"},
	{"FU", "Funding", "sponsor of the study"},
	{"RE", "Registration", "trial registration number"},
}

// AspectSets returns the names of the registered aspect sets.
func AspectSets() []string { return []string{AspectSetTracSum, AspectSetPCoA} }

// Aspects returns the aspects of a set in their canonical order (TracSum: a i o p m d s), or nil
// for an unknown set. The slice is a copy.
func Aspects(set string) []Aspect {
	switch set {
	case AspectSetTracSum:
		return append([]Aspect(nil), tracsumAspects...)
	case AspectSetPCoA:
		return append([]Aspect(nil), pcoaAspects...)
	}
	return nil
}

// LookupAspect finds an aspect of a set by code, case-insensitively ("O" and "o" are both
// TracSum's Outcomes), or by full name ("Side Effects"). The returned Aspect carries the
// canonical code.
func LookupAspect(set, code string) (Aspect, bool) {
	for _, a := range Aspects(set) {
		if strings.EqualFold(a.Code, code) || strings.EqualFold(a.Name, code) {
			return a, true
		}
	}
	return Aspect{}, false
}

// MustAspect is LookupAspect for codes written in the program itself; it panics on an unknown
// code, which is a programming error.
func MustAspect(set, code string) Aspect {
	a, ok := LookupAspect(set, code)
	if !ok {
		panic(fmt.Sprintf("dataset: unknown aspect %q in set %q", code, set))
	}
	return a
}

// detectAspectSet picks the set of a file from its first aspect code: TracSum's single lower-case
// letters first, since "p", "i", "o" and "m" would also match PCoA case-insensitively.
func detectAspectSet(code string) (string, bool) {
	for _, a := range tracsumAspects {
		if a.Code == code || a.Name == code {
			return AspectSetTracSum, true
		}
	}
	if _, ok := LookupAspect(AspectSetPCoA, code); ok {
		return AspectSetPCoA, true
	}
	return "", false
}

#!/usr/bin/python3
"""Regenerates textmetrics/porter/testdata/stems.tsv: a generated vocabulary stemmed
by NLTK's PorterStemmer (default NLTK_EXTENSIONS mode).

Run from the repository root with Debian's python3 and python3-nltk:

    /usr/bin/python3 tools/golden/porter_golden.py textmetrics/porter/testdata/stems.tsv

The vocabulary is deterministic (fixed seed): clinical words, their
inflections and derivations, the examples of Porter's paper, every suffix of
every rule glued to random stems, all words of one and two letters, and a few
mixed-case, digit and non-ASCII forms.
"""

import random
import sys

import nltk
from nltk.stem.porter import PorterStemmer

CLINICAL = """
abdomen abdominal ablation abnormal abnormality abscess absorption accuracy acute
adenocarcinoma adherence adjuvant administration admission adolescent adult adverse
aetiology age aged aging airway albumin alcohol allergy allergic alleviate ambulatory
amputation anaemia anemia analgesia analgesic analysis analyses anaphylaxis anastomosis
anatomy anesthesia anesthetic aneurysm angina angiography angioplasty ankle antagonist
antibiotic antibody anticoagulant anticoagulation antigen antiplatelet antiviral anxiety
aorta aortic apnea appendectomy appendicitis arrhythmia arterial artery arthritis
arthroplasty aspirin assay assessment asthma asymptomatic ataxia atherosclerosis atrial
atrophy attenuated autoimmune autopsy bacteremia bacterial bacterium baseline benign
bilateral biliary biomarker biopsy bladder bleeding blinded blood bone bradycardia brain
breast bronchitis bypass calcium cancer capillary carcinoma cardiac cardiology
cardiomyopathy cardiovascular caregiver carotid cartilage catheter catheterization cell
cellular cerebral cervical chemotherapy chest child childhood children chronic cirrhosis
clinical clinician clinically clot coagulation cognition cognitive cohort colitis colon
colonoscopy colorectal comorbidity complication compliance computed confidence confounding
congenital consent constipation contraindication control controlled coronary correlation
cortex corticosteroid cough creatinine critical cross cystic cytokine death decline
deficiency degeneration dehydration delirium dementia demographic dental depression
dermatitis diabetes diabetic diagnosis diagnostic dialysis diarrhea diastolic diet dietary
differentiation digestive disability discharge disease disorder distal dizziness dosage dose
dosing drug duodenal duration dysfunction dyspnea edema efficacy effectiveness elderly
electrocardiogram embolism emergency emphysema encephalitis endocrine endometrial
endoscopic endoscopy endothelial enrollment enzyme epidemiology epidural epilepsy
epithelial erythema esophageal estrogen etiology evaluation exacerbation examination
excision exercise exposure extubation failure fatigue femoral fever fibrillation fibrosis
fistula fluid follicular follow fracture gastric gastroenteritis gastrointestinal gene
genetic genome genotype gestational gland glaucoma glucose gynecologic haematoma
haemorrhage headache healing health healthy heart hematologic hemodialysis hemoglobin
hemorrhage hepatic hepatitis hernia heterogeneity hip histology histopathological hormone
hospital hospitalization hospitalized hypertension hypertensive hypoglycemia hypotension
hypothesis hypoxia hysterectomy imaging immune immunity immunization immunotherapy
impairment implant implantation incidence incision infant infarction infection
infectious inflammation inflammatory influenza infusion ingestion inhibitor injection
injury inpatient insulin intensive intervention intestinal intracranial intravenous
intubation invasive ischemia ischemic kidney laboratory laparoscopic laparoscopy lesion
leukemia ligament lipid liver lobectomy longitudinal lumbar lung lymph lymphoma
malignancy malignant mammography management mastectomy maternal mechanical median
medication medicine melanoma membrane meningitis menopause metabolic metabolism metastasis
metastatic microbial migraine morbidity mortality mucosa mucosal muscle muscular mutation
myocardial nausea necrosis neonatal neoplasm nephropathy nerve neurological neuropathy
neurosurgery nodule nutrition nutritional obesity observational obstetric obstruction
occlusion oncology operative ophthalmic opioid oral organ orthopedic osteoporosis
outcome outpatient ovarian overdose oxygen pain palliative pancreatic pandemic paralysis
parenteral pathogen pathology patient patients pediatric pelvic perfusion perinatal
peripheral peritoneal pharmacokinetic pharmacological pharmacy phenotype physician
physiological placebo plasma platelet pneumonia polymorphism population postoperative
precision prednisone pregnancy pregnant premature prescription prevalence prevention
preventive primary probability procedure prognosis prognostic progression prophylaxis
prostate prosthesis protein proteinuria protocol psychiatric psychological pulmonary
quality radiation radiography radiology radiotherapy randomization randomized
randomised reactive receptor recovery rectal recurrence recurrent referral regimen
rehabilitation relapse remission renal resection resistance respiratory response
resuscitation retinal retrospective rheumatoid risk safety sarcoma screening secondary
sedation seizure sensitivity sepsis septic serum severity sexual shock sickle
significance significant significantly skeletal skin sleep smoking specificity spinal
spleen statistical stenosis stent sterile steroid stimulation stomach stroke subcutaneous
suicide supplementation surgery surgical survival susceptibility symptom symptomatic
syndrome systemic systolic tachycardia therapeutic therapy thoracic thrombosis thyroid
tissue tolerance topical toxicity transfusion transplant transplantation trauma treatment
tremor trial tuberculosis tumor tumour ulcer ultrasound urinary urine uterine vaccination
vaccine vaginal vascular vein venous ventilation ventricular viral virus visual vitamin
vomiting weight wound
mg kg ml dl mmol ci hr or rr iv im bid tid qid prn icu ecg mri ct pet bmi hba1c covid sars
cov copd hiv aids
randomly randomness blinding unblinded enrolled enrolling enrolment allocated allocating
allocation concealment stratified stratification intention treat per protocol efficacious
noninferiority noninferior superiority equivalence multicenter multicentre singlecenter
retrospectively prospectively prospective crossover parallel factorial pragmatic
explanatory adjudicated adjudication endpoint endpoints primarily secondarily tertiary
exploratory subgroup subgroups heterogeneous homogeneous sensitivities specificities
predictive predictor predictors predicting predicted prediction predictions associated
association associations correlated correlating correlational regression regressions
logistic multivariable multivariate univariate univariable adjusted adjusting adjustment
adjustments confounder confounders hazard hazards ratio ratios interval intervals odds
increased increasing increases decrease decreased decreasing reduced reducing reduction
reductions improved improving improvement improvements worsened worsening deteriorated
deterioration sustained sustaining persistent persistently transient transiently
relational conditional rational valenci hesitanci digitizer conformabli radicalli
differentli vileli analogousli vietnamization predication operator feudalism decisiveness
hopefulness callousness formaliti sensitiviti sensibiliti triplicate formative formalize
electriciti electrical hopeful goodness revival allowance inference airliner gyroscopic
adjustable defensible irritant replacement adjustment dependent adoption homologou
communism activate angulariti homologous effective bowdlerize probate rate cease
controll roll caresses ponies ties caress cats feed agreed plastered bled motoring sing
conflated troubled sized hopping tanned falling hissing fizzed failing filing happy sky
generalizations oscillators generously gently dying lying tying news innings inning
outings outing cannings canning howe proceed exceed succeed skies spied died flies dies
fly spy try enjoy enjoyment archaeology geology theology philology biology psychology
emotionally fully hopefully carefully beautifully logically
"""

# Suffixes of every Porter rule plus common English derivational endings.
SUFFIXES = """
s es ies sses ss ed ied eed ing ings y ly ily ally ally fully ously entli ently
ational tional enci anci izer bli abli alli entli eli ousli ization ation ator alism
iveness fulness ousness aliti iviti biliti fulli logi icate ative alize iciti ical ful
ness al ance ence er ic able ible ant ement ment ent ion sion tion ou ism ate iti ous
ive ize e ll at bl iz ized izing izes ation ations ational ationally ist ists istic
ity ities ology ologies ological ologically ectomy ectomies itis oma omas osis oses
emia emic pathy pathic plasty scopy scopic graphy graphic ogenic ogenesis ase ases
""".split()

STEMS = """
cardi hepat nephr neur gastr oste arthr derm hemat onc immun pulmon ren vascul
lymph my cyt path bacteri vir glyc lip prote enzym hormon mut genet diagnos
therap surg operat medic prescrib administ evalu assess monitor screen detect
measur analy random alloc stratif adjust correl regress predict associ signific
improv reduc increas decreas compar contrib develop establish investig demonstr
relat condit ration digit conform radic differ vile analog feud decis hope call
formal sensit sensib tripl form electr good reviv allow infer airlin gyroscop
adjust defens irrit replac depend adopt homolog commun activ angul effect bowdler
prob cont roll car pon t cat fe agr plaster bl motor s confl troubl s hop tan fall
hiss fizz fail fil happ sk gener oscill gen d l news inn out cann how proc exc succ
sp tr enjo archae ge theo philo bio psycho emotion ful care beauti log
""".split()

LETTERS = "abcdefghijklmnopqrstuvwxyz"
# English-like letter weights so random stems have realistic vowel runs.
WEIGHTED = "eeeeeeeeeeaaaaaaaaiiiiiiiooooooonnnnnnrrrrrrtttttttsssssslllllcccdddmmmpphhggbbffyywwkvxzjqu"


def vocabulary():
    rng = random.Random(20261121)
    words = []
    seen = set()

    def add(w):
        if w and w not in seen and "\t" not in w and "\n" not in w:
            seen.add(w)
            words.append(w)

    clinical = CLINICAL.split()
    for w in clinical:
        add(w)
    # Inflections and derivations of the clinical words.
    for w in clinical:
        base = w[:-1] if w.endswith("e") else w
        for suf in ("s", "es", "ed", "ing", "er", "ly", "ness", "ation", "ization",
                    "ize", "ized", "izing", "ity", "ive", "ous", "al", "ally", "ment",
                    "ments", "able", "ability", "ic", "ical", "ically", "ist", "ism"):
            if rng.random() < 0.35:
                add(base + suf)
    # Every suffix on the short stems: exercises each rule and its measure test.
    for st in STEMS:
        for suf in SUFFIXES:
            if rng.random() < 0.5:
                add(st + suf)
    # Random stems of varied length glued to rule suffixes (cvc / double
    # consonant / y cases arise naturally).
    for _ in range(2500):
        n = rng.randint(1, 8)
        st = "".join(rng.choice(WEIGHTED) for _ in range(n))
        if rng.random() < 0.2:
            st += st[-1]  # double consonant / vowel endings
        add(st + rng.choice(SUFFIXES))
    # All words of one and two letters, and a sample of three-letter ones.
    for a in LETTERS:
        add(a)
        for b in LETTERS:
            add(a + b)
    for _ in range(400):
        add("".join(rng.choice(LETTERS) for _ in range(3)))
    for _ in range(150):
        add("".join(rng.choice(LETTERS) for _ in range(rng.randint(4, 14))))
    # Case, digits, punctuation inside tokens, and non-ASCII letters.
    for w in clinical[:120]:
        r = rng.random()
        add(w.upper() if r < 0.4 else w.capitalize() if r < 0.8 else w[0] + w[1:].upper())
    for w in ("Sky", "SKIES", "Dying", "NEWS", "Proceed", "covid-19", "sars-cov-2",
              "il-6", "t-cells", "b12", "1990s", "2nd", "3rd", "10mg", "x-rays",
              "o'neill", "patients'", "hba1c", "ct-scans", "naïve", "café", "cafés",
              "señoras", "über", "résumés", "fibroses", "α-blockers", "β-cells",
              "yyy", "yy", "y", "ay", "oy", "eye", "eyes", "boy", "boys", "toying",
              "syzygy", "yearly", "layered", "ies", "ied", "sses", "eed", "ing", "ed",
              "ying", "ation", "ational", "alli", "logi", "bli", "ll", "sll",
              # Python's str.lower: U+0130 expands, capital sigma is final or not.
              "İstanbul", "İ", "İİ", "ΟΔΟΣ", "ΣΟΦΟΣ.", "Σ", "ΑΣ", "ΟΔΟΣ\u0301", "Α\u0301Σ",
              "ΟΔΟΣ-ΑΣ", "ΌΣΟΣ", "ΣΑΣ'Σ", "ǅemal", "ΣΣ", "AΣ", "aΣb", "ΣTATES", "ﬁbrosis",
              "straße", "STRASSE", "Ωmega", "\u212aelvin"):
        add(w)
    return words


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: porter_golden.py OUT.tsv")
    stemmer = PorterStemmer()
    words = vocabulary()
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write("# word<TAB>stem by nltk %s PorterStemmer (NLTK_EXTENSIONS); regenerate: "
                "/usr/bin/python3 tools/golden/porter_golden.py textmetrics/porter/testdata/stems.tsv\n"
                % nltk.__version__)
        for w in words:
            f.write("%s\t%s\n" % (w, stemmer.stem(w)))
    print("wrote %d words to %s" % (len(words), sys.argv[1]))


if __name__ == "__main__":
    main()

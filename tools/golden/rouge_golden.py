#!/usr/bin/python3
"""Regenerates textmetrics/rouge/testdata/golden.json: generated (reference,
prediction) pairs scored by Google's rouge-score, with and without stemming.

Google's code is not part of this repository. Copy rouge_scorer.py,
scoring.py, tokenize.py and tokenizers.py from
github.com/google-research/google-research/tree/master/rouge into
REF_DIR/rouge/ (plus an empty __init__.py), then from the repository root:

    /usr/bin/python3 tools/golden/rouge_golden.py REF_DIR textmetrics/rouge/testdata/golden.json

Needs Debian's python3-nltk, python3-absl and python3-six (python3-numpy only
if your scoring.py imports it). Pairs are deterministic (fixed seed).
"""

import json
import random
import sys

WORDS = """
patients patient randomized randomised trial trials treatment treated treating
placebo group groups mortality survival hospitalization hospitalized admission
outcome outcomes primary secondary endpoint endpoints significant significantly
reduced reduction reducing increase increased increasing risk risks ratio hazard
confidence interval months weeks days years follow-up adverse events serious
infection infections sepsis pneumonia ventilation intensive care unit children
adults elderly women men pregnant dose doses dosing mg kg daily twice oral
intravenous insulin glucose diabetes diabetic hypertension blood pressure stroke
cardiac heart failure myocardial infarction cancer tumour tumor chemotherapy
radiotherapy surgery surgical postoperative complications pain analgesia opioid
vaccine vaccination antibody antibodies efficacy safety tolerability quality life
cohort retrospective prospective observational meta-analysis studies study review
the a an of in and or with without to for was were is are be by on at from than
not no versus compared between among after before during within per each all
""".split()

STEMMY = """
relational conditional generalization generalizations hopeful hopefulness
caresses ponies flies dies dying lying agreed feed hopping falling filing
controlling effective adjustable replacement dependent adoption activate
happy happiness skies sky news innings proceeding proceed exceeded
""".split()

PUNCT = [".", ",", ";", ":", "!", "?", "(", ")", "-", "/", "%", "'", '"', "--", "...", "[", "]"]
UNICODE = ["naïve", "café", "İstanbul", "\u212aelvin", "β-blocker", "α", "μg", "患者",
           "😀", "–", "—", "“quoted”", "‘single’", "½", "²", "٣", "Ω", "ﬁbrosis", "\u00a0", "\u2009"]


def sentence(rng, n=None):
    n = n or rng.randint(3, 18)
    toks = []
    for _ in range(n):
        r = rng.random()
        if r < 0.70:
            toks.append(rng.choice(WORDS))
        elif r < 0.80:
            toks.append(rng.choice(STEMMY))
        elif r < 0.88:
            toks.append(str(rng.choice([rng.randint(0, 100), rng.randint(100, 5000)]))
                        + rng.choice(["", "", "%", ".5", " mg", "mg/kg", ",000"]))
        elif r < 0.95:
            toks.append(rng.choice(PUNCT))
        else:
            toks.append(rng.choice(UNICODE))
        if rng.random() < 0.08:
            toks[-1] = toks[-1].capitalize() if rng.random() < 0.5 else toks[-1].upper()
    s = " ".join(toks)
    if rng.random() < 0.3:
        s = s.replace(" , ", ", ").replace(" .", ".")
    return s + rng.choice([".", ".", "", "!", "?", ";"])


def perturb(rng, text):
    """Derives a prediction from a reference: drops, swaps, substitutions,
    inflection changes, sentence reordering and duplication."""
    lines = text.split("\n")
    out = []
    for line in lines:
        toks = line.split(" ")
        new = []
        for t in toks:
            r = rng.random()
            if r < 0.12:
                continue
            if r < 0.20:
                new.append(rng.choice(WORDS))
            elif r < 0.26:
                new.append(t + rng.choice(["s", "ed", "ing", "ly", "ness"]))
            elif r < 0.30:
                new.extend([t, t])
            else:
                new.append(t)
        if len(new) > 3 and rng.random() < 0.3:
            i = rng.randrange(len(new) - 1)
            new[i], new[i + 1] = new[i + 1], new[i]
        out.append(" ".join(new))
    if len(out) > 1 and rng.random() < 0.4:
        rng.shuffle(out)
    if rng.random() < 0.15:
        out.append(rng.choice(out))
    return "\n".join(out)


def multiline(rng, k):
    sep = rng.choice(["\n", "\n", "\n\n", "\n \n", "\r\n"])
    return sep.join(sentence(rng) for _ in range(k))


def pairs():
    rng = random.Random(20261121)
    out = [
        ("", ""), ("", "patients improved"), ("patients improved", ""),
        ("...", "!!!"), ("  \n \n", "\n"), ("the the the the", "the the"),
        ("a b c d e f", "f e d c b a"), ("a a a b b", "a b a b a b"),
        ("Mortality was 12.5% (95% CI 10.1-14.9).", "mortality 12 5 95 ci 10 1 14 9"),
        ("The quick brown fox jumps over the lazy dog",
         "The quick brown dog jumps on the log."),
        ("one two three\nfour five six", "four five six\none two three"),
        ("one two three\nfour five six", "one two three four five six"),
        ("one two one two\none two", "two one\none two one"),
        ("İstanbul \u212aelvin naïve", "i stanbul kelvin na ve"),
        ("患者 😀 ½ ² ٣", "患者"), ("ﬁbrosis", "fibrosis"),
        ("x\ry\rz", "x y z"), ("tab\tseparated\twords", "tab separated words"),
        ("generalizations relational hopefulness", "generalization relate hope"),
        ("dying lying tying skies", "die lie tie sky"),
    ]
    while len(out) < 360:
        r = rng.random()
        if r < 0.45:
            ref = sentence(rng)
            pred = perturb(rng, ref)
        elif r < 0.75:
            ref = multiline(rng, rng.randint(2, 5))
            pred = perturb(rng, ref)
        elif r < 0.85:
            ref = multiline(rng, rng.randint(1, 4))
            pred = multiline(rng, rng.randint(1, 4))
        elif r < 0.93:
            # Long texts: abstracts vs summaries.
            ref = multiline(rng, rng.randint(6, 12))
            pred = perturb(rng, "\n".join(ref.split("\n")[: rng.randint(1, 4)]))
        else:
            ref = sentence(rng, rng.randint(1, 3))
            pred = rng.choice(["", sentence(rng, 1), ref.upper(), ref])
        if rng.random() < 0.5:
            ref, pred = pred, ref
        out.append((ref, pred))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: rouge_golden.py REF_DIR OUT.json")
    sys.path.insert(0, sys.argv[1])
    from rouge import rouge_scorer, tokenize
    from nltk.stem import porter

    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    scorers = {
        "nostem": rouge_scorer.RougeScorer(types, use_stemmer=False),
        "stem": rouge_scorer.RougeScorer(types, use_stemmer=True),
    }
    stemmer = porter.PorterStemmer()
    cases = []
    for ref, pred in pairs():
        case = {"reference": ref, "prediction": pred,
                "ref_tokens": tokenize.tokenize(ref, None),
                "ref_tokens_stem": tokenize.tokenize(ref, stemmer)}
        for name, sc in scorers.items():
            res = sc.score(ref, pred)
            case[name] = {t: [res[t].precision, res[t].recall, res[t].fmeasure] for t in types}
        cases.append(case)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/golden/rouge_golden.py", "cases": cases},
                  f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("wrote %d pairs to %s" % (len(cases), sys.argv[2]))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Regenerates textmetrics/wordtok/testdata/golden.json: generated sentences and
their tokens from NLTK's word_tokenize(text, preserve_line=True) (Debian's
NLTK has no punkt model, so sentence splitting is not applied).

Run from the repository root with Debian's python3 and python3-nltk:

    /usr/bin/python3 tools/golden/wordtok_golden.py textmetrics/wordtok/testdata/golden.json
"""

import json
import random
import sys

import nltk
from nltk.tokenize import word_tokenize

FIXED = [
    "", " ", "\n", ".", "..", "...", "a.", "a..", "Hello.", "Hello world.",
    'He said "don\'t" (twice).',
    "Good muffins cost $3.88\nin New York.  Please buy me\ntwo of them.\nThanks.",
    "They'll save and invest more.", "hi, my name can't hello,",
    "I cannot believe you're gonna do that, and you wanna go?",
    "Gimme a break, lemme go; I gotta run.", "D'ye know more'n me?",
    "'Tis the season, 'twas the night.", "'tis 'TWAS 'Tis",
    "It's John's book; isn't it? We'd've known. I'm sure you'd agree.",
    "The patients' outcomes were 'good' but 'not great'.",
    "O'Neill and rock 'n' roll and 'em and 'a' and 'b",
    "``Quoted'' text and ''double single'' quotes and `single backtick`.",
    "«Chevrons» and “curly double” and ‘curly single’ and „low“ quotes.",
    "End with quote.\"", "End with paren.)", "End with both.\")", "Ellipsis at end...",
    "Interior. Periods. Are. Kept.", "Mr. Smith vs. Dr. Jones, e.g. U.S.A. and i.e. etc.",
    "Times 10:30 and 3,000,000 and 1:2 ratio, a:b and x,y.", "trailing colon:", "trailing comma,",
    "comma before newline,\n", "colon before newline:\n",
    "Email me at a.b@example.com or visit http://example.com/a?b=c&d=e#frag.",
    "#hashtag @user 50% $100 & more; semicolons; everywhere;",
    "Stars * and ** and ***bold***.", "Dashes -- and --- and ---- and - and –en and —em.",
    "Brackets [a], braces {b}, angles <c>, parens (d).",
    "Question? Exclamation! Both?! Again!!",
    "Tabs\tand\nnewlines\r\nand\x0bvertical\x0cform\x1cseparators\u2028line\u3000ideographic\u00a0nbsp.",
    "Unicode: naïve café İstanbul ſtrange K kelvin β-blockers μg 患者 😀 ½ ² ٣.",
    "It's 'ſ' and 'İ' and 'ı' and 'K'.", "Don'T WON'T can'T I'M YOU'RE THEY'LL WE'VE HE'D",
    "' quote at start", "'' two quotes at start", '" double quote at start', '"Quoted." "Again."',
    "(\"quoted in parens\") [''quoted in brackets''] {\"x\"} <''y''>",
    "x'y' z' a'b '' c", "a' ' b", "it''s", "'s 'm 'd 'll 're 've n't",
    "wanna\tgo wanna. wannabe gonnaa cannot. Cannot! CANNOT? cannotx xcannot",
    "The ratio (95% CI, 1.2–3.4; p<0.001) was significant.",
    "Follow-up at 12 months (n=240) showed HbA1c reduction of 0.5%.",
    "Mortality was lower (12.1% vs. 14.3%, p = .04).",
    "Word.'", "Word.' ", "Word. ' ", "Word.\"  \n", "Word.)\t", "Word.» ", "Word.’", "Word .",
    "a . b .", "..a", "a...b", "a. . .", "a.\n\nb.", "3.14.", "v2.0.", "...!", "?.", "!.",
    "***", "&&&", "@@", "``", "````", "```", "''''", "'", "''", "'''", "\"\"", "\"", "--", "---",
]

WORDS = """patients trial randomized placebo mortality outcome dose insulin cohort
women men children adults therapy surgery risk ratio hazard interval study
review analysis baseline follow-up endpoint efficacy safety vaccine infection
the a of in and or with to for was were is not no versus after before""".split()

CLITIC_WORDS = ["don't", "can't", "won't", "isn't", "it's", "they're", "we've", "I'm",
                "you'll", "he'd", "patient's", "patients'", "cannot", "gonna", "wanna",
                "gotta", "'tis", "'twas", "lemme", "gimme", "O'Brien", "'em", "y'all",
                "ma'am", "rock'n'roll", "DON'T", "Can't", "IT'S"]

PUNCT = [".", ",", ";", ":", "?", "!", "(", ")", "[", "]", "{", "}", "<", ">", "\"", "'",
         "''", "``", "`", "--", "...", "..", "-", "/", "%", "$", "#", "@", "&", "*",
         "«", "»", "“", "”", "‘", "’", "„", "–", "—"]

NUMBERS = ["3", "3.5", "3,000", "10:30", "1:2", "0.05", "95%", "$4.50", "2.5mg", "1,2", "p<0.05",
           "n=12", "12.", "1990s", "3rd", "IL-6", "COVID-19"]


def sentence(rng):
    n = rng.randint(2, 20)
    toks = []
    for _ in range(n):
        r = rng.random()
        if r < 0.55:
            toks.append(rng.choice(WORDS))
        elif r < 0.67:
            toks.append(rng.choice(CLITIC_WORDS))
        elif r < 0.77:
            toks.append(rng.choice(NUMBERS))
        else:
            toks.append(rng.choice(PUNCT))
        if rng.random() < 0.1:
            toks[-1] = toks[-1].capitalize()
    out = ""
    for t in toks:
        # Vary spacing: glued punctuation is where the rules differ.
        sep = rng.choice([" ", " ", " ", "", "", "  ", "\t", "\n"]) if out else ""
        out += sep + t
    r = rng.random()
    if r < 0.3:
        out = '"' + out
    elif r < 0.4:
        out = "(" + out
    r = rng.random()
    if r < 0.5:
        out += rng.choice([".", ".", "?", "!", "...", ".)", ".\"", ".'", ". ", ".\n", ",", ":", ".’ "])
    return out


SOUP = list("`'\".,:;()[]{}<>-*?!&%$#@ \n\t\r«»“”‘’„_") + [
    "a", "b", "x", "1", "2", "9", "é", "ß", "٣", "can", "not", "'t", "is", "was", "wan", "na", "d",
    "'ye", "more", "'n", "gim", "me", "s", "S", "ll", "re", "ve", "n't", "N'T", "m", "ſ", "İ", "  "]


def soup(rng):
    """Adversarial character soup: the rules' edge cases collide here."""
    return "".join(rng.choice(SOUP) for _ in range(rng.randint(1, 25)))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: wordtok_golden.py OUT.json")
    rng = random.Random(20261121)
    texts = list(FIXED)
    seen = set(texts)
    while len(texts) < 1000:
        s = sentence(rng) if len(texts) < 650 else soup(rng)
        if s not in seen:
            seen.add(s)
            texts.append(s)
    cases = [{"text": t, "tokens": word_tokenize(t, preserve_line=True)} for t in texts]
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/golden/wordtok_golden.py",
                   "nltk": nltk.__version__, "cases": cases}, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("wrote %d sentences to %s" % (len(cases), sys.argv[1]))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Regenerates eval/stats/testdata/golden.json: generated vector pairs with
scipy's pearsonr, spearmanr and kendalltau (tau-b, method='auto').

Run from the repository root with Debian's python3, python3-numpy and
python3-scipy:

    /usr/bin/python3 tools/golden/stats_golden.py eval/stats/testdata/golden.json
"""

import json
import sys

import numpy as np
import scipy
from scipy import stats


def cases():
    rng = np.random.default_rng(20261121)
    out = []

    def add(desc, x, y):
        out.append((desc, [float(v) for v in x], [float(v) for v in y]))

    # Continuous, no ties: exact Kendall p for n <= 33, asymptotic above.
    for n in (3, 4, 5, 8, 10, 15, 20, 25, 33, 34, 40, 60, 100, 250, 1000):
        x = rng.normal(size=n)
        for rho in (0.0, 0.5, -0.8):
            y = rho * x + np.sqrt(1 - rho * rho) * rng.normal(size=n)
            add("normal n=%d rho=%g" % (n, rho), x, y)
    # Ties: Likert ratings, rounded ROUGE-like scores, binary judgements.
    for n in (5, 10, 20, 33, 50, 120, 400):
        x = rng.integers(1, 6, size=n)
        y = np.clip(x + rng.integers(-2, 3, size=n), 1, 5)
        add("likert n=%d" % n, x, y)
        f = np.round(rng.beta(2, 3, size=n), 2)
        g = np.round(np.clip(f + rng.normal(scale=0.15, size=n), 0, 1), 1)
        add("rounded scores n=%d" % n, f, g)
        b = rng.integers(0, 2, size=n)
        add("binary vs score n=%d" % n, b, np.round(b * 0.3 + rng.random(n), 2))
    # Monotone and near-monotone: Kendall's min(dis, tot-dis) <= 1 branch.
    for n in (12, 40, 80, 200):
        x = np.arange(n, dtype=float) + rng.random(n) * 0.1
        add("perfect increasing n=%d" % n, x, x * 2 + 1)
        add("perfect decreasing n=%d" % n, x, -x)
        y = x.copy()
        y[[3, 4]] = y[[4, 3]]
        add("one swap n=%d" % n, x, y)
    # Small and awkward.
    add("n=2 increasing", [1, 2], [3, 5])
    add("n=2 decreasing", [1, 2], [5, 3])
    add("n=3 tie in y", [1, 2, 3], [1, 1, 2])
    add("huge scale", rng.normal(size=30) * 1e8 + 1e9, rng.normal(size=30))
    add("tiny scale", rng.normal(size=30) * 1e-8, rng.normal(size=30) * 1e-6)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: stats_golden.py OUT.json")
    res = []
    for desc, x, y in cases():
        c = {"desc": desc, "x": x, "y": y}
        r = stats.pearsonr(x, y)
        c["pearson"] = [float(r[0]), float(r[1])]
        if len(x) >= 3:
            s = stats.spearmanr(x, y)
            c["spearman"] = [float(s[0]), float(s[1])]
        k = stats.kendalltau(x, y)
        c["kendall"] = [float(k[0]), float(k[1])]
        res.append(c)
    with open(sys.argv[1], "w") as f:
        json.dump({"generator": "tools/golden/stats_golden.py", "scipy": scipy.__version__,
                   "cases": res}, f, indent=0)
        f.write("\n")
    print("wrote %d cases to %s" % (len(res), sys.argv[1]))


if __name__ == "__main__":
    main()
